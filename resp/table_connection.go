package resp

// connectionRows adds the rows of resp/connection.go: PING, HELLO, AUTH, CLIENT, …
func (t *tableBuilder) connectionRows() {
	t.group = "connection"
	t.add("ping", -1, RoleRead, effLocal, FlagNoAuth|FlagFast|flagSubscribed, cmdPing, "Returns the server's liveliness response.")
	t.add("echo", 2, RoleRead, effNone, FlagFast, cmdEcho, "Returns the given string.")
	t.add("hello", -1, RoleRead, effLocal, FlagNoAuth|FlagFast|FlagNoScript, cmdHello, "Handshakes with the server (protocol 2 only).")
	t.add("auth", -2, RoleRead, effLocal, FlagNoAuth|FlagFast|FlagNoScript, cmdAuth, "Authenticates the connection.")
	t.add("quit", -1, RoleRead, effLocal, FlagNoAuth|FlagFast|FlagNotQueued|flagSubscribed, cmdQuit, "Closes the connection.")
	t.add("select", 2, RoleRead, effNone, FlagFast, cmdSelect, "Changes the selected database (0 only).")
	// Redis lets RESET run before AUTH; SPEC §5 allows only AUTH, HELLO,
	// PING and QUIT there, so it does not here.
	t.add("reset", 1, RoleRead, effNone, FlagFast|FlagNotQueued|flagSubscribed, cmdReset, "Resets the connection.")
	client := t.add("client", -2, RoleRead, effLocal, FlagNoScript, nil, "A container for client connection commands.")
	t.sub(client, "id", 2, RoleRead, effLocal, FlagFast, cmdClientID, "Returns the unique client ID of the connection.")
	t.sub(client, "setname", 3, RoleRead, effLocal, FlagFast, cmdClientSetName, "Sets the connection name.")
	t.sub(client, "getname", 2, RoleRead, effLocal, FlagFast, cmdClientGetName, "Returns the name of the connection.")
	t.sub(client, "setinfo", 4, RoleRead, effLocal, FlagFast, cmdClientSetInfo, "Sets information specific to the client or connection.")
	t.sub(client, "info", 2, RoleRead, effLocal, 0, cmdClientInfo, "Returns information about the connection.")
	t.sub(client, "list", -2, RoleAdmin, effLocal, 0, cmdClientList, "Lists open connections.")
	t.sub(client, "kill", -3, RoleAdmin, effLocal, 0, cmdClientKill, "Terminates open connections.")
	t.sub(client, "unblock", -3, RoleAdmin, effLocal, 0, cmdClientUnblock, "Unblocks a client blocked by a blocking command from a different connection.",
		docs("5.0.0", "O(log N) where N is the number of client connections", argInt("client-id"), argOneOf("unblock-type", true, argWord("TIMEOUT"), argWord("ERROR"))))
	t.sub(client, "reply", 3, RoleRead, effLocal, 0, cmdClientReply, "Instructs the server whether to reply to commands.",
		docs("3.2.0", "O(1)", argOneOf("action", false, argWord("ON"), argWord("OFF"), argWord("SKIP"))))
	t.sub(client, "help", 2, RoleRead, effLocal, 0, cmdClientHelp, "Returns helpful text about the different subcommands.")
	t.sub(client, "no-evict", 3, RoleAdmin, effLocal, 0, cmdClientNoEvict, "Sets the client eviction mode of the connection.",
		docs("7.0.0", "O(1)", argOneOf("enabled", false, argWord("ON"), argWord("OFF"))))
	t.sub(client, "no-touch", 3, RoleRead, effLocal, FlagFast, cmdClientNoTouch, "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
		docs("7.2.0", "O(1)", argOneOf("enabled", false, argWord("ON"), argWord("OFF"))))
}
