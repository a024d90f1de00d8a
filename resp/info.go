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

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// INFO: one function per section, in the order Redis prints them. Beside
// tenure's own fields each section shows the Redis names that tools read
// (redis-cli --stat, redis-py's info(), exporters), but only values that
// are true of tenure: fields Redis has and tenure does not track are left
// out rather than shown as zeros that would mislead.
var infoSections = []struct {
	name   string
	title  string // the section's header, when not its name capitalised
	fields func(*Server) [][2]string
	// notDefault: INFO and INFO default leave the section out, as Redis
	// does; INFO all and everything show it.
	notDefault bool
}{
	{name: "server", fields: (*Server).infoServer},
	{name: "clients", fields: (*Server).infoClients},
	{name: "memory", fields: (*Server).infoMemory},
	{name: "persistence", fields: (*Server).infoPersistence},
	{name: "stats", fields: (*Server).infoStats},
	{name: "replication", fields: (*Server).infoReplication},
	{name: "cpu", title: "CPU", fields: (*Server).infoCPU},
	{name: "commandstats", fields: (*Server).commandStats, notDefault: true},
	{name: "errorstats", fields: (*Server).errorStats}, // errorstats.go
	{name: "cluster", fields: (*Server).infoCluster},   // cluster.go
	{name: "keyspace", fields: (*Server).infoKeyspace},
	{name: "locks", fields: (*Server).infoLocks},
}

func cmdInfo(c *conn, args [][]byte) {
	want := map[string]bool{}
	all, byDefault := false, len(args) == 1
	for _, a := range args[1:] {
		switch s := strings.ToLower(string(a)); s {
		case "all", "everything":
			all = true
		case "default":
			byDefault = true
		default:
			want[s] = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !want[sec.name] && (!byDefault || sec.notDefault) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		title := sec.title
		if title == "" {
			title = strings.ToUpper(sec.name[:1]) + sec.name[1:]
		}
		b.WriteString("# " + title + "\r\n")
		for _, f := range sec.fields(c.srv) {
			b.WriteString(f[0] + ":" + f[1] + "\r\n")
		}
	}
	c.out.Verbatim(b.String())
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
		{"pubsub_clients", itoa(int64(s.pubsub.clients()))},
	}
}

func (s *Server) infoMemory() [][2]string {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	peak := s.heapPeak(m.HeapAlloc)
	fields := [][2]string{
		{"used_memory", utoa(m.HeapAlloc)},
		{"used_memory_human", humanBytes(m.HeapAlloc)},
		{"used_memory_peak", utoa(peak)},
		{"used_memory_peak_human", humanBytes(peak)},
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
		[2]string{"number_of_cached_scripts", itoa(s.scripts.cached())},
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
		{"rdb_last_save_time", itoa(st.LastSync)}, // LASTSAVE
		{"async_loading", "0"},
		{"aof_enabled", "1"},
		{"aof_rewrite_in_progress", "0"},
		{"aof_last_write_status", "ok"},
		{"rdb_bgsave_in_progress", "0"},
		{"rdb_changes_since_last_save", itoa(st.ChangesSinceSave)},
		{"wal_syncs", itoa(st.WALSyncs)},
		{"wal_sync_writers", itoa(st.WALSyncWriters)},
		{"wal_fsync", st.WALFsync}, // io_uring or fdatasync (kv/storage_uring_linux.go)
	}
}

func (s *Server) infoStats() [][2]string {
	st := s.store.Stats()
	channels, patterns, shard := s.pubsub.stats()
	return [][2]string{
		{"total_connections_received", itoa(s.stats.connectionsTotal.Load())},
		{"total_commands_processed", itoa(s.stats.commandsTotal.Load())},
		{"rejected_connections", itoa(s.stats.rejectedConns.Load())},
		{"expired_keys", itoa(st.ExpiredTotal)},
		{"keyspace_hits", itoa(st.KeyspaceHits)},
		{"keyspace_misses", itoa(st.KeyspaceMisses)},
		{"auth_failures", itoa(s.stats.authFailures.Load())},
		{"instantaneous_ops_per_sec", itoa(s.stats.opsRate.read(time.Now(), s.stats.commandsTotal.Load()))},
		{"total_net_input_bytes", itoa(s.stats.netInput.Load())},
		{"total_net_output_bytes", itoa(s.stats.netOutput.Load())},
		{"evicted_keys", "0"},
		{"migrate_cached_sockets", "0"}, // MIGRATE keeps no connection between calls
		{"total_error_replies", itoa(s.stats.errorReplies.Load())},
		{"pubsub_channels", itoa(int64(channels))},
		{"pubsub_patterns", itoa(int64(patterns))},
		{"pubsubshard_channels", itoa(int64(shard))},
		{"client_output_buffer_limit_disconnections", itoa(s.pubsub.cut.Load())},
		{"latest_fork_usec", "0"},
	}
}

func (s *Server) infoReplication() [][2]string {
	if s.cluster != nil {
		return s.clusterReplication()
	}
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
	return [][2]string{{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", st.Keys, st.KeysWithExpiry, st.AvgTTL)}}
}

func (s *Server) infoCPU() [][2]string {
	self, children, ok := cpuTimes()
	if !ok {
		return nil
	}
	sec := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) }
	return [][2]string{
		{"used_cpu_sys", sec(self[1])},
		{"used_cpu_user", sec(self[0])},
		{"used_cpu_sys_children", sec(children[1])},
		{"used_cpu_user_children", sec(children[0])},
	}
}

func (s *Server) infoLocks() [][2]string {
	st := s.locks.Stats()
	if s.cluster != nil {
		// SPEC §10: this node's applied epoch, leader or not.
		st.Epoch = s.store.Epoch()
	}
	return [][2]string{
		{"epoch", utoa(st.Epoch)},
		{"leases", itoa(int64(st.Leases))},
		{"waiters", itoa(int64(st.Waiters))},
		{"watchers", itoa(st.Watchers)}, // LOCK.WATCH waiting (SPEC §3)
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

// rejected counts a request refused before cmd's handler ran, and
// returns cmd, for dispatch.
func (cmd *command) rejected() *command {
	if cmd.metrics != nil {
		cmd.metrics.rejected.Add(1)
	}
	return cmd
}

// commandStat is one line of INFO's Commandstats section, read back from
// the row's Prometheus series, so that counting a command costs nothing
// more on its way.
type commandStat struct {
	calls, usec, rejected, failed int64
}

// stat is the row's numbers since the last CONFIG RESETSTAT.
func (cm *commandMetrics) stat() commandStat {
	st := cm.total()
	if b := cm.base.Load(); b != nil {
		st.calls -= b.calls
		st.usec -= b.usec
		st.rejected -= b.rejected
		st.failed -= b.failed
	}
	return st
}

// resetStat makes stat count from now, for CONFIG RESETSTAT.
func (cm *commandMetrics) resetStat() {
	st := cm.total()
	cm.base.Store(&st)
}

// total is the row's numbers since the server started.
func (cm *commandMetrics) total() commandStat {
	var st commandStat
	var m dto.Metric
	if h, ok := cm.duration.(prometheus.Metric); ok && h.Write(&m) == nil && m.Histogram != nil {
		st.calls = int64(m.Histogram.GetSampleCount())
		st.usec = int64(m.Histogram.GetSampleSum() * 1e6)
	}
	var errs int64
	if p := cm.errs.Load(); p != nil {
		for _, e := range *p {
			var em dto.Metric
			if e.c.Write(&em) == nil && em.Counter != nil {
				errs += int64(em.Counter.GetValue())
			}
		}
	}
	st.rejected = cm.rejected.Load()
	st.calls -= st.rejected
	st.failed = errs - st.rejected
	return st
}

// commandStats is INFO's Commandstats: one line per row that ran since
// the last CONFIG RESETSTAT, in Redis's format.
func (s *Server) commandStats() [][2]string {
	var out [][2]string
	for _, row := range s.rows() {
		if row.metrics == nil {
			continue
		}
		st := row.metrics.stat()
		if st.calls == 0 && st.rejected == 0 {
			continue
		}
		perCall := 0.0
		if st.calls > 0 {
			perCall = float64(st.usec) / float64(st.calls)
		}
		out = append(out, [2]string{"cmdstat_" + row.Name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			st.calls, st.usec, perCall, st.rejected, st.failed)})
	}
	return out
}

// rows are the table's rows, subcommands after their command, by name.
func (s *Server) rows() []*command {
	var rows []*command
	for _, n := range s.commandNames() {
		cmd := s.table[n]
		rows = append(rows, cmd)
		for _, sub := range sortedNames(cmd.Subcommands) {
			rows = append(rows, cmd.Subcommands[sub])
		}
	}
	return rows
}

// heapPeak raises the peak of used_memory to now's value and returns it.
// The peak is of the values INFO has read, as Redis's is of the values its
// cron samples.
func (s *Server) heapPeak(now uint64) uint64 {
	for {
		peak := s.stats.heapPeak.Load()
		if now <= peak || s.stats.heapPeak.CompareAndSwap(peak, now) {
			return max(peak, now)
		}
	}
}
