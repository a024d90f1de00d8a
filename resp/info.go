package resp

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// infoMore is what INFO shows beyond Server.info's fields, for the tools
// that read Redis's names (redis-cli --stat, redis-py's info(), exporters):
// only values that are true of tenure. Fields Redis has and tenure does not
// track (keyspace_hits, used_memory_peak, …) are left out rather than
// shown as zeros that would mislead.
func (s *Server) infoMore(section string) [][2]string {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	switch section {
	case "server":
		exe, _ := os.Executable()
		return [][2]string{
			{"redis_git_sha1", "00000000"},
			{"redis_git_dirty", "0"},
			{"run_id", s.runID},
			{"process_supervised", "no"},
			{"server_time_usec", i(time.Now().UnixMicro())},
			{"executable", exe},
			{"config_file", ""},
		}
	case "clients":
		return [][2]string{
			{"cluster_connections", "0"},
			{"tracking_clients", "0"},
			{"pubsub_clients", "0"},
		}
	case "memory":
		var more [][2]string
		if rss, ok := residentBytes(); ok {
			more = append(more, [2]string{"used_memory_rss", strconv.FormatUint(rss, 10)},
				[2]string{"used_memory_rss_human", humanBytes(rss)})
		}
		return append(more,
			[2]string{"maxmemory", "0"},
			[2]string{"maxmemory_human", "0B"},
			[2]string{"maxmemory_policy", "noeviction"},
			[2]string{"mem_allocator", "go-" + runtime.Version()},
		)
	case "persistence":
		// Every write goes to Pebble's write-ahead log, as to an AOF; there
		// are no snapshots and no forks.
		return [][2]string{
			{"async_loading", "0"},
			{"aof_enabled", "1"},
			{"aof_rewrite_in_progress", "0"},
			{"aof_last_write_status", "ok"},
			{"rdb_bgsave_in_progress", "0"},
			{"rdb_changes_since_last_save", "0"},
		}
	case "stats":
		return [][2]string{
			{"instantaneous_ops_per_sec", i(s.stats.opsRate.read(time.Now(), s.stats.commandsTotal.Load()))},
			{"total_net_input_bytes", i(s.stats.netInput.Load())},
			{"total_net_output_bytes", i(s.stats.netOutput.Load())},
			{"evicted_keys", "0"},
			{"total_error_replies", i(s.stats.errorReplies.Load())},
			{"pubsub_channels", "0"},
			{"pubsub_patterns", "0"},
			{"latest_fork_usec", "0"},
		}
	case "replication":
		return [][2]string{
			{"role", "master"},
			{"connected_slaves", "0"},
			{"master_replid", s.runID},
			{"master_repl_offset", "0"},
		}
	}
	return nil
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
