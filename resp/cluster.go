package resp

import (
	"net"
	"strconv"
	"strings"

	"github.com/tenure-db/tenure/cluster"
)

// CLUSTER and ROLE: a cluster described to Redis Cluster clients as one
// shard holding all 16384 slots, led by the leader (SPEC §10). A single
// server answers CLUSTER as Redis without cluster mode does.

const errClusterDisabled = "This instance has cluster support disabled"

// clusterOnly wraps a CLUSTER subcommand: a single server refuses it.
func clusterOnly(h func(c *conn, args [][]byte, st cluster.Status)) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if c.srv.cluster == nil {
			c.out.Err(errClusterDisabled)
			return
		}
		h(c, args, c.srv.cluster.Status())
	}
}

// hostPort splits a node's address for CLUSTER SLOTS and SHARDS.
func hostPort(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}

// noShard is CLUSTER SLOTS' and SHARDS' answer while no leader is known:
// an error, not an empty list, so that a client refreshing its routing
// during an election asks another node or keeps what it knew (redis-py's
// RedisCluster, told of no slots, forgets every node and never recovers).
func noShard(c *conn) { c.out.Error("CLUSTERDOWN", "no leader") }

func cmdClusterSlots(c *conn, args [][]byte, st cluster.Status) {
	if st.Leader.ID == "" {
		noShard(c)
		return
	}
	nodes := append([]cluster.Member{st.Leader}, st.Followers()...)
	c.out.Array(1)
	c.out.Array(2 + len(nodes))
	c.out.Int(0)
	c.out.Int(16383)
	for _, n := range nodes {
		host, port := hostPort(n.Addr)
		c.out.Array(3)
		c.out.BulkString(host)
		c.out.Int(int64(port))
		c.out.BulkString(n.ID)
	}
}

func cmdClusterShards(c *conn, args [][]byte, st cluster.Status) {
	if st.Leader.ID == "" {
		noShard(c)
		return
	}
	nodes := append([]cluster.Member{st.Leader}, st.Followers()...)
	c.out.Array(1)
	c.out.Map(2)
	c.out.BulkString("slots")
	c.out.Array(2)
	c.out.Int(0)
	c.out.Int(16383)
	c.out.BulkString("nodes")
	c.out.Array(len(nodes))
	for i, n := range nodes {
		host, port := hostPort(n.Addr)
		role := "replica"
		if i == 0 {
			role = "master"
		}
		c.out.Map(7)
		c.out.BulkString("id")
		c.out.BulkString(n.ID)
		c.out.BulkString("port")
		c.out.Int(int64(port))
		c.out.BulkString("ip")
		c.out.BulkString(host)
		c.out.BulkString("endpoint")
		c.out.BulkString(host)
		c.out.BulkString("role")
		c.out.BulkString(role)
		c.out.BulkString("replication-offset")
		c.out.Int(max(n.Applied, 0))
		c.out.BulkString("health")
		if n.Applied >= 0 || i == 0 {
			c.out.BulkString("online")
		} else {
			c.out.BulkString("fail")
		}
	}
}

func cmdClusterNodes(c *conn, args [][]byte, st cluster.Status) {
	var b strings.Builder
	for _, n := range st.Nodes {
		flags, master, slots := "slave", st.Leader.ID, ""
		if n.ID == st.Leader.ID {
			flags, master, slots = "master", "-", " 0-16383"
		}
		if master == "" {
			master = "-"
		}
		if n.ID == st.Self {
			flags = "myself," + flags
		}
		host, port := hostPort(n.Addr)
		b.WriteString(n.ID + " " + host + ":" + itoa(int64(port)) + "@" + itoa(int64(port)) + " " + flags + " " + master +
			" 0 0 " + utoa(st.Term) + " connected" + slots + "\n")
	}
	c.out.Verbatim(b.String())
}

func cmdClusterInfo(c *conn, args [][]byte, st cluster.Status) {
	state, slots := "fail", "0"
	if st.Leader.ID != "" {
		state, slots = "ok", "16384"
	}
	lines := [][2]string{
		{"cluster_enabled", "1"},
		{"cluster_state", state},
		{"cluster_slots_assigned", slots},
		{"cluster_slots_ok", slots},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", "0"},
		{"cluster_known_nodes", itoa(int64(len(st.Nodes)))},
		{"cluster_size", "1"},
		{"cluster_current_epoch", utoa(st.Term)},
		{"cluster_my_epoch", utoa(st.Term)},
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l[0] + ":" + l[1] + "\r\n")
	}
	c.out.Verbatim(b.String())
}

func cmdClusterMyID(c *conn, args [][]byte, st cluster.Status) { c.out.BulkString(st.Self) }

func cmdClusterKeySlot(c *conn, args [][]byte, st cluster.Status) {
	c.out.Int(int64(KeySlot(args[2])))
}

// cmdClusterMeet is CLUSTER MEET host port: the node there joins as a
// voter. It must have been started with --node-id and no --peers, waiting
// to be added.
func cmdClusterMeet(c *conn, args [][]byte, st cluster.Status) {
	port, err := strconv.Atoi(string(args[3]))
	if err != nil || port <= 0 || port > 65535 {
		c.out.Err("Invalid base port specified: " + cut128(args[3]))
		return
	}
	if err := c.srv.cluster.Meet(c.context(), net.JoinHostPort(string(args[2]), string(args[3]))); err != nil {
		c.clusterError(nil, args, err)
		return
	}
	c.out.OK()
}

func cmdClusterForget(c *conn, args [][]byte, st cluster.Status) {
	if string(args[2]) == st.Self {
		c.out.Err("I tried hard but I can't forget myself...")
		return
	}
	if err := c.srv.cluster.Forget(c.context(), string(args[2])); err != nil {
		c.clusterError(nil, args, err)
		return
	}
	c.out.OK()
}

func cmdClusterHelp(c *conn, args [][]byte) {
	if c.srv.cluster == nil {
		c.out.Err(errClusterDisabled)
		return
	}
	c.out.BulkStrings(
		"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"INFO", "    Return information about the cluster.",
		"SLOTS", "    Return the slot ranges and the nodes that serve them: one shard, all 16384 slots, led by the leader.",
		"SHARDS", "    Return the shard and its nodes.",
		"NODES", "    Return the cluster configuration as Redis prints it.",
		"MYID", "    Return this node's id.",
		"KEYSLOT <key>", "    Return the hash slot of <key>.",
		"MEET <ip> <port>", "    Add the node listening there as a voter (on the leader).",
		"FORGET <node-id>", "    Remove a node from the cluster (on the leader).",
		"HELP", "    Print this help.",
	)
}

// cmdRole is ROLE in Redis's shape: ["master", offset, [[host, port,
// offset] …]] on the leader (and on a single server), ["slave", host,
// port, state, offset] on another node.
func cmdRole(c *conn, args [][]byte) {
	if c.srv.cluster == nil {
		c.out.Array(3)
		c.out.BulkString("master")
		c.out.Int(0)
		c.out.Array(0)
		return
	}
	st := c.srv.cluster.Status()
	if st.Leader.ID == st.Self {
		followers := st.Followers()
		c.out.Array(3)
		c.out.BulkString("master")
		c.out.Int(int64(st.AppliedIndex))
		c.out.Array(len(followers))
		for _, n := range followers {
			host, port := hostPort(n.Addr)
			c.out.Array(3)
			c.out.BulkString(host)
			c.out.BulkString(itoa(int64(port)))
			c.out.BulkString(itoa(max(n.Applied, 0)))
		}
		return
	}
	host, port := hostPort(st.Leader.Addr)
	state := "connected"
	if st.Leader.ID == "" {
		state = "connect"
	}
	c.out.Array(5)
	c.out.BulkString("slave")
	c.out.BulkString(host)
	c.out.Int(int64(port))
	c.out.BulkString(state)
	c.out.Int(int64(st.AppliedIndex))
}

// infoCluster is INFO's # Cluster section, which Redis Cluster clients
// (redis-py's RedisCluster) read to know a node is in cluster mode.
func (s *Server) infoCluster() [][2]string {
	if s.cluster == nil {
		return [][2]string{{"cluster_enabled", "0"}}
	}
	return [][2]string{{"cluster_enabled", "1"}}
}

// clusterReplication is INFO's # Replication section in a cluster: this
// node's role and indices, its leader, and every voter with its lag.
func (s *Server) clusterReplication() [][2]string {
	st := s.cluster.Status()
	role := "slave"
	if st.Leader.ID == st.Self {
		role = "master"
	}
	lines := [][2]string{
		{"role", role},
		{"raft_state", st.Role},
		{"node_id", st.Self},
		{"leader_id", st.Leader.ID},
		{"leader_addr", st.Leader.Addr},
		{"raft_term", utoa(st.Term)},
		{"raft_commit_index", utoa(st.CommitIndex)},
		{"raft_applied_index", utoa(st.AppliedIndex)},
		{"raft_last_index", utoa(st.LastIndex)},
		{"connected_slaves", itoa(int64(len(st.Followers())))},
		{"master_repl_offset", utoa(st.AppliedIndex)},
	}
	for i, n := range st.Nodes {
		lag := "unknown"
		if n.Applied >= 0 {
			lag = itoa(max(0, int64(st.CommitIndex)-n.Applied))
		}
		lines = append(lines, [2]string{"peer" + itoa(int64(i)),
			"id=" + n.ID + ",addr=" + n.Addr + ",applied=" + itoa(n.Applied) + ",lag=" + lag})
	}
	return lines
}
