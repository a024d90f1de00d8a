package resp

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// INFO: one function per section, in the order Redis prints them. Beside
// tenure's own fields each section shows the Redis names that tools read
// (redis-cli --stat, redis-py's info(), exporters), but only values that
// are true of tenure: fields Redis has and tenure does not track
// (keyspace_hits, used_memory_peak, …) are left out rather than shown as
// zeros that would mislead.
var infoSections = []struct {
	name   string
	fields func(*Server) [][2]string
}{
	{"server", (*Server).infoServer},
	{"clients", (*Server).infoClients},
	{"memory", (*Server).infoMemory},
	{"persistence", (*Server).infoPersistence},
	{"stats", (*Server).infoStats},
	{"replication", (*Server).infoReplication},
	{"keyspace", (*Server).infoKeyspace},
	{"locks", (*Server).infoLocks},
}

func cmdInfo(c *conn, args [][]byte) {
	want := map[string]bool{}
	all := len(args) == 1
	for _, a := range args[1:] {
		switch s := strings.ToLower(string(a)); s {
		case "all", "everything", "default":
			all = true
		default:
			want[s] = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !want[sec.name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(sec.name[:1]) + sec.name[1:] + "\r\n")
		for _, f := range sec.fields(c.srv) {
			b.WriteString(f[0] + ":" + f[1] + "\r\n")
		}
	}
	c.out.BulkString(b.String())
}

func utoa(n uint64) string { return strconv.FormatUint(n, 10) }

func (s *Server) infoServer() [][2]string {
	up := time.Since(s.start)
	port := ""
	if a := s.Addr(); a != nil {
		if _, p, err := splitHostPort(a.String()); err == nil {
			port = p
		}
	}
	exe, _ := os.Executable()
	return [][2]string{
		{"redis_version", RedisVersion},
		{"tenure_version", Version},
		{"redis_mode", "standalone"},
		{"os", runtime.GOOS + " " + runtime.GOARCH},
		{"arch_bits", "64"},
		{"go_version", runtime.Version()},
		{"process_id", strconv.Itoa(os.Getpid())},
		{"tcp_port", port},
		{"uptime_in_seconds", itoa(int64(up.Seconds()))},
		{"uptime_in_days", itoa(int64(up.Hours() / 24))},
		{"redis_git_sha1", "00000000"},
		{"redis_git_dirty", "0"},
		{"run_id", s.runID},
		{"process_supervised", "no"},
		{"server_time_usec", itoa(time.Now().UnixMicro())},
		{"executable", exe},
		{"config_file", ""},
	}
}

func (s *Server) infoClients() [][2]string {
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	return [][2]string{
		{"connected_clients", strconv.Itoa(n)},
		{"maxclients", itoa(s.maxClients.Load())},
		{"blocked_clients", itoa(s.stats.blocked.Load())},
		{"cluster_connections", "0"},
		{"tracking_clients", "0"},
		{"pubsub_clients", "0"},
	}
}

func (s *Server) infoMemory() [][2]string {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fields := [][2]string{
		{"used_memory", utoa(m.HeapAlloc)},
		{"used_memory_human", humanBytes(m.HeapAlloc)},
		{"used_memory_sys", utoa(m.Sys)},
		{"go_heap_objects", utoa(m.HeapObjects)},
		{"go_num_gc", utoa(uint64(m.NumGC))},
	}
	if rss, ok := residentBytes(); ok {
		fields = append(fields, [2]string{"used_memory_rss", utoa(rss)},
			[2]string{"used_memory_rss_human", humanBytes(rss)})
	}
	return append(fields,
		[2]string{"maxmemory", "0"},
		[2]string{"maxmemory_human", "0B"},
		[2]string{"maxmemory_policy", "noeviction"},
		[2]string{"mem_allocator", "go-" + runtime.Version()},
	)
}

// infoPersistence: every write goes to Pebble's write-ahead log, as to an
// AOF; there are no snapshots and no forks.
func (s *Server) infoPersistence() [][2]string {
	st := s.store.Stats()
	return [][2]string{
		{"loading", "0"},
		{"appendonly", "1"},
		{"appendfsync", s.cfg.Fsync.String()},
		{"disk_bytes", utoa(st.DiskUsage)},
		{"async_loading", "0"},
		{"aof_enabled", "1"},
		{"aof_rewrite_in_progress", "0"},
		{"aof_last_write_status", "ok"},
		{"rdb_bgsave_in_progress", "0"},
		{"rdb_changes_since_last_save", "0"},
	}
}

func (s *Server) infoStats() [][2]string {
	st := s.store.Stats()
	return [][2]string{
		{"total_connections_received", itoa(s.stats.connectionsTotal.Load())},
		{"total_commands_processed", itoa(s.stats.commandsTotal.Load())},
		{"rejected_connections", itoa(s.stats.rejectedConns.Load())},
		{"expired_keys", itoa(st.ExpiredTotal)},
		{"auth_failures", itoa(s.stats.authFailures.Load())},
		{"instantaneous_ops_per_sec", itoa(s.stats.opsRate.read(time.Now(), s.stats.commandsTotal.Load()))},
		{"total_net_input_bytes", itoa(s.stats.netInput.Load())},
		{"total_net_output_bytes", itoa(s.stats.netOutput.Load())},
		{"evicted_keys", "0"},
		{"total_error_replies", itoa(s.stats.errorReplies.Load())},
		{"pubsub_channels", "0"},
		{"pubsub_patterns", "0"},
		{"latest_fork_usec", "0"},
	}
}

func (s *Server) infoReplication() [][2]string {
	return [][2]string{
		{"role", "master"},
		{"connected_slaves", "0"},
		{"master_replid", s.runID},
		{"master_repl_offset", "0"},
	}
}

func (s *Server) infoKeyspace() [][2]string {
	st := s.store.Stats()
	if st.Keys == 0 {
		return nil
	}
	return [][2]string{{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", st.Keys, st.KeysWithExpiry)}}
}

func (s *Server) infoLocks() [][2]string {
	st := s.locks.Stats()
	return [][2]string{
		{"epoch", utoa(st.Epoch)},
		{"leases", itoa(int64(st.Leases))},
		{"waiters", itoa(int64(st.Waiters))},
		{"grants_total", utoa(st.GrantsTotal)},
		{"renewals_total", utoa(st.RenewalsTotal)},
		{"released_total", utoa(st.ReleasedTotal)},
		{"expired_total", utoa(st.ExpiredTotal)},
		{"revoked_total", utoa(st.RevokedTotal)},
	}
}

// newRunID is Redis's run_id: 40 random hex characters, new at each open.
func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// residentBytes reads the process's resident set size where /proc has it.
func residentBytes() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}
