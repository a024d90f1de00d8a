package resp

// keyRows adds the rows of resp/keys.go: DEL, EXPIRE, TTL, SCAN, RENAME, OBJECT, …
func (t *tableBuilder) keyRows() {
	t.group = "generic"
	t.add("del", -2, RoleWrite, effWrite|effBatch, 0, cmdDel, "Deletes one or more keys.", keys(1, -1, 1))
	t.add("unlink", -2, RoleWrite, effWrite|effBatch, FlagFast, cmdDel, "Asynchronously deletes one or more keys.", keys(1, -1, 1))
	t.add("exists", -2, RoleRead, effRead, FlagFast, cmdExists, "Determines whether one or more keys exist.", keys(1, -1, 1))
	t.add("expire", -3, RoleWrite, effWrite, FlagFast, cmdExpire, "Sets the expiration time of a key in seconds.", keys(1, 1, 1))
	t.add("pexpire", -3, RoleWrite, effWrite, FlagFast, cmdPExpire, "Sets the expiration time of a key in milliseconds.", keys(1, 1, 1))
	t.add("expireat", -3, RoleWrite, effWrite, FlagFast, cmdExpireAt, "Sets the expiration time of a key to a Unix timestamp.", keys(1, 1, 1))
	t.add("pexpireat", -3, RoleWrite, effWrite, FlagFast, cmdPExpireAt, "Sets the expiration time of a key to a Unix milliseconds timestamp.", keys(1, 1, 1))
	t.add("ttl", 2, RoleRead, effRead, FlagFast, cmdTTL, "Returns the expiration time in seconds of a key.", keys(1, 1, 1))
	t.add("pttl", 2, RoleRead, effRead, FlagFast, cmdPTTL, "Returns the expiration time in milliseconds of a key.", keys(1, 1, 1))
	t.add("persist", 2, RoleWrite, effWrite, FlagFast, cmdPersist, "Removes the expiration time of a key.", keys(1, 1, 1))
	t.add("type", 2, RoleRead, effRead, FlagFast, cmdType, "Determines the type of value stored at a key.", keys(1, 1, 1))
	t.add("keys", 2, RoleRead, effRead, 0, cmdKeys, "Returns all key names that match a pattern.")
	t.add("scan", -2, RoleRead, effRead, 0, cmdScan, "Iterates over the key names in the database.")
	t.add("rename", 3, RoleWrite, effWrite, 0, cmdRename, "Renames a key and overwrites the destination.", keys(1, 2, 1))
	t.add("renamenx", 3, RoleWrite, effWrite, FlagFast, cmdRenameNX, "Renames a key only when the target key name doesn't exist.", keys(1, 2, 1))
	t.add("touch", -2, RoleRead, effRead, FlagFast, cmdTouch, "Returns the number of existing keys out of those specified after updating the time they were last accessed.", keys(1, -1, 1),
		docs("3.2.1", "O(N) where N is the number of keys that will be touched.", arg{Name: "key", Type: "key", Multiple: true}))
	t.add("expiretime", 2, RoleRead, effRead, FlagFast, cmdExpireTime, "Returns the expiration time of a key as a Unix timestamp.", keys(1, 1, 1),
		docs("7.0.0", "O(1)", argKey("key")))
	t.add("pexpiretime", 2, RoleRead, effRead, FlagFast, cmdPExpireTime, "Returns the expiration time of a key as a Unix milliseconds timestamp.", keys(1, 1, 1),
		docs("7.0.0", "O(1)", argKey("key")))
	t.add("randomkey", 1, RoleRead, effRead, flagNodeAnswer, cmdRandomKey, "Returns a random key name from the database.",
		docs("1.0.0", "O(1)"))
	t.add("copy", -3, RoleWrite, effWrite, 0, cmdCopy, "Copies the value of a key to a new key.", keys(1, 2, 1),
		docs("6.2.0", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
			argKey("source"), argKey("destination"), arg{Name: "destination-db", Type: "integer", Token: "DB", Optional: true}, argToken("REPLACE")))
	t.add("dump", 2, RoleRead, effRead, 0, cmdDump, "Returns a serialized representation of the value stored at a key.", keys(1, 1, 1),
		docs("2.6.0", "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
			argKey("key")))
	restoreArgs := []arg{argKey("key"), argInt("ttl"), argString("serialized-value"), argToken("REPLACE"), argToken("ABSTTL"),
		argOption("IDLETIME", "seconds"), argOption("FREQ", "frequency")}
	t.add("restore", -4, RoleWrite, effWrite, 0, cmdRestore, "Creates a key from the serialized representation of a value.", keys(1, 1, 1),
		docs("2.6.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
			restoreArgs...))
	t.add("restore-asking", -4, RoleWrite, effWrite, 0, cmdRestore, "An internal command for migrating keys in a cluster.", keys(1, 1, 1),
		docs("3.0.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size.",
			restoreArgs...))
	t.add("migrate", -6, RoleWrite, effWrite, 0, cmdMigrate, "Atomically transfers a key from one Redis instance to another.", keys(3, 3, 1),
		docs("2.6.0", "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
			argString("host"), argInt("port"), argString("key"), argInt("destination-db"), argInt("timeout"), argToken("COPY"), argToken("REPLACE"),
			arg{Name: "authentication", Type: "oneof", Optional: true, Args: []arg{
				{Name: "auth", Type: "string", Token: "AUTH"},
				{Name: "auth2", Type: "block", Token: "AUTH2", Args: []arg{argString("username"), argString("password")}}}},
			arg{Name: "keys", Type: "key", Token: "KEYS", Optional: true, Multiple: true}))
	object := t.add("object", -2, RoleRead, effRead, 0, nil, "A container for object introspection commands.")
	t.sub(object, "encoding", 3, RoleRead, effRead, 0, cmdObjectEncoding, "Returns the internal encoding of a Redis object.", keys(2, 2, 1),
		docs("2.2.3", "O(1)", argKey("key")))
	t.sub(object, "freq", 3, RoleRead, effRead, 0, cmdObjectFreq, "Returns the logarithmic access frequency counter of a Redis object.", keys(2, 2, 1),
		docs("4.0.0", "O(1)", argKey("key")))
	t.sub(object, "refcount", 3, RoleRead, effRead, 0, cmdObjectRefCount, "Returns the reference count of a value of a key.", keys(2, 2, 1),
		docs("2.2.3", "O(1)", argKey("key")))
	t.sub(object, "help", 2, RoleRead, effNone, 0, cmdObjectHelp, "Returns helpful text about the different subcommands.")
}
