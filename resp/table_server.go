package resp

// serverRows adds the rows of resp/server.go, resp/info.go, resp/config.go and
// resp/cluster.go: COMMAND, CONFIG, INFO, SAVE, ROLE, CLUSTER, … (COMMAND
// DOCS's group "server", CLUSTER and ROLE included).
func (t *tableBuilder) serverRows() {
	t.group = "server"
	t.add("info", -1, RoleRead, effLocal, flagNodeAnswer, cmdInfo, "Returns information and statistics about the server.")
	command := t.add("command", -1, RoleRead, effLocal, 0, cmdCommand, "Returns detailed information about all commands.")
	t.sub(command, "count", 2, RoleRead, effLocal, 0, cmdCommandCount, "Returns a count of commands.")
	t.sub(command, "info", -2, RoleRead, effLocal, 0, cmdCommandInfo, "Returns information about one, multiple or all commands.")
	t.sub(command, "docs", -2, RoleRead, effLocal, 0, cmdCommandDocs, "Returns documentary information about one, multiple or all commands.")
	t.sub(command, "list", -2, RoleRead, effLocal, 0, cmdCommandList, "Returns a list of command names.")
	t.sub(command, "help", 2, RoleRead, effLocal, 0, cmdCommandHelp, "Returns helpful text about the different subcommands.")
	t.sub(command, "getkeys", -4, RoleRead, effLocal, 0, cmdCommandGetKeys, "Extracts the key names from an arbitrary command.",
		docs("2.8.13", "O(N) where N is the number of arguments to the command", argString("command"), arg{Name: "arg", Type: "string", Optional: true, Multiple: true}))
	t.sub(command, "getkeysandflags", -4, RoleRead, effLocal, 0, cmdCommandGetKeysAndFlags, "Extracts the key names and access flags for an arbitrary command.",
		docs("7.0.0", "O(N) where N is the number of arguments to the command", argString("command"), arg{Name: "arg", Type: "string", Optional: true, Multiple: true}))
	config := t.add("config", -2, RoleRead, effNone, FlagNoScript, nil, "A container for server configuration commands.")
	t.sub(config, "get", -3, RoleRead, effNone, 0, cmdConfigGet, "Returns the effective values of configuration parameters.")
	t.sub(config, "set", -4, RoleAdmin, effNone, 0, cmdConfigSet, "Sets configuration parameters in-flight.")
	t.sub(config, "resetstat", 2, RoleAdmin, effNone, 0, cmdConfigResetStat, "Resets the server's statistics.")
	t.sub(config, "help", 2, RoleRead, effNone, 0, cmdConfigHelp, "Returns helpful text about the different subcommands.")
	t.add("dbsize", 1, RoleRead, effRead, FlagFast, cmdDBSize, "Returns the number of keys in the database.")
	t.add("flushdb", -1, RoleAdmin, effWrite, 0, cmdFlushAll, "Removes all keys from the current database.")
	t.add("flushall", -1, RoleAdmin, effWrite, 0, cmdFlushAll, "Removes all keys from all databases.")
	t.add("time", 1, RoleRead, effNone, FlagFast, cmdTime, "Returns the server time.")
	t.add("shutdown", -1, RoleAdmin, effNone, FlagNoMulti, cmdShutdown, "Stops the server cleanly.")
	t.add("save", 1, RoleAdmin, effLocal, FlagNoMulti|FlagNoScript, cmdSave, "Makes a durable point of the whole keyspace: flushes and syncs it to disk.",
		docs("1.0.0", "O(N) where N is the total number of keys in all databases"))
	t.add("bgsave", -1, RoleAdmin, effLocal, FlagNoScript, cmdBgSave, "Makes a durable point of the whole keyspace in the background.",
		docs("1.0.0", "O(N) where N is the total number of keys in all databases", argToken("SCHEDULE")))
	memory := t.add("memory", -2, RoleRead, effRead, 0, nil, "A container for memory diagnostics commands.")
	t.sub(memory, "usage", -3, RoleRead, effRead, 0, cmdMemoryUsage, "Estimates the memory usage of a key.", keys(2, 2, 1),
		docs("4.0.0", "O(N) where N is the number of samples.", argKey("key"), argOption("SAMPLES", "count")))
	t.sub(memory, "help", 2, RoleRead, effNone, 0, cmdMemoryHelp, "Returns helpful text about the different subcommands.")
	t.add("monitor", 1, RoleAdmin, effLocal, FlagNoScript, cmdMonitor, "Listens for all requests received by the server in real-time.",
		docs("1.0.0", ""))
	t.add("lastsave", 1, RoleRead, effNone, FlagFast|flagNodeAnswer, cmdLastSave, "Returns the Unix timestamp of the last fsync of the write-ahead log.",
		docs("1.0.0", "O(1)"))

	// cluster: resp/cluster.go (SPEC §10)
	t.add("role", 1, RoleRead, effLocal, FlagFast|FlagNoScript, cmdRole, "Returns the replication role.", docs("2.8.12", "O(1)"))
	cluster := t.add("cluster", -2, RoleRead, effLocal, FlagNoScript, nil, "A container for Redis Cluster commands.")
	t.sub(cluster, "info", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterInfo), "Returns information about the state of a node.")
	t.sub(cluster, "slots", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterSlots), "Returns the mapping of cluster slots to nodes.")
	t.sub(cluster, "shards", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterShards), "Returns the mapping of cluster slots to shards.")
	t.sub(cluster, "nodes", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterNodes), "Returns the cluster configuration for a node.")
	t.sub(cluster, "myid", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterMyID), "Returns the ID of a node.")
	t.sub(cluster, "keyslot", 3, RoleRead, effLocal, 0, clusterOnly(cmdClusterKeySlot), "Returns the hash slot for a key.")
	t.sub(cluster, "meet", -4, RoleAdmin, effLocal, 0, clusterOnly(cmdClusterMeet), "Adds the node at host port to the cluster as a voter.")
	t.sub(cluster, "forget", 3, RoleAdmin, effLocal, 0, clusterOnly(cmdClusterForget), "Removes a node from the cluster.")
	t.sub(cluster, "help", 2, RoleRead, effLocal, 0, cmdClusterHelp, "Returns helpful text about the different subcommands.")
}
