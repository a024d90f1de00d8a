package resp

// stringRows adds the rows of resp/strings.go and resp/compare.go: GET, SET, INCR,
// LCS, DELEX, …
func (t *tableBuilder) stringRows() {
	t.group = "string"
	t.add("get", 2, RoleRead, effRead|effBatch, FlagFast, cmdGet, "Returns the string value of a key.", keys(1, 1, 1))
	t.add("set", -3, RoleWrite, effWrite|effBatch, 0, cmdSet, "Sets the string value of a key, with SET … FENCE f refusing older fences.", keys(1, 1, 1),
		docs("1.0.0", "O(1), O(N) with IFDEQ or IFDNE where N is the length of the string value", argKey("key"), argString("value"),
			condArgs(argWord("NX"), argWord("XX")),
			argToken("GET"),
			argOneOf("expiration", true, argTokenInt("EX", "seconds"), argTokenInt("PX", "milliseconds"),
				argTokenInt("EXAT", "unix-time-seconds"), argTokenInt("PXAT", "unix-time-milliseconds"), argWord("KEEPTTL")),
			argOption("FENCE", "fence")))
	t.add("setnx", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdSetNX, "Set the string value of a key only when the key doesn't exist.", keys(1, 1, 1))
	t.add("setex", 4, RoleWrite, effWrite, 0, cmdSetEX, "Sets the string value and expiration time of a key.", keys(1, 1, 1))
	t.add("psetex", 4, RoleWrite, effWrite, 0, cmdPSetEX, "Sets both string value and expiration time in milliseconds of a key.", keys(1, 1, 1))
	t.add("getset", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdGetSet, "Returns the previous string value of a key after setting it to a new value.", keys(1, 1, 1))
	t.add("getdel", 2, RoleWrite, effWrite|effBatch, FlagFast, cmdGetDel, "Returns the string value of a key after deleting the key.", keys(1, 1, 1))
	t.add("getex", -2, RoleWrite, effWrite, FlagFast, cmdGetEx, "Returns the string value of a key after setting its expiration time.", keys(1, 1, 1))
	t.add("mget", -2, RoleRead, effRead|effBatch, FlagFast, cmdMGet, "Atomically returns the string values of one or more keys.", keys(1, -1, 1))
	t.add("mset", -3, RoleWrite, effWrite|effBatch, 0, cmdMSet, "Atomically creates or modifies the string values of one or more keys.", keys(1, -1, 2))
	t.add("msetnx", -3, RoleWrite, effWrite, 0, cmdMSetNX, "Atomically modifies the string values of one or more keys only when all keys don't exist.", keys(1, -1, 2))
	t.add("incr", 2, RoleWrite, effWrite|effBatch, FlagFast, cmdIncr, "Increments the integer value of a key by one.", keys(1, 1, 1))
	t.add("decr", 2, RoleWrite, effWrite|effBatch, FlagFast, cmdDecr, "Decrements the integer value of a key by one.", keys(1, 1, 1))
	t.add("incrby", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdIncrBy, "Increments the integer value of a key by a number.", keys(1, 1, 1))
	t.add("decrby", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdDecrBy, "Decrements a number from the integer value of a key.", keys(1, 1, 1))
	t.add("incrbyfloat", 3, RoleWrite, effWrite, FlagFast, cmdIncrByFloat, "Increment the floating point value of a key by a number.", keys(1, 1, 1))
	t.add("append", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdAppend, "Appends a string to the value of a key.", keys(1, 1, 1))
	t.add("strlen", 2, RoleRead, effRead|effBatch, FlagFast, cmdStrLen, "Returns the length of a string value.", keys(1, 1, 1))
	t.add("getrange", 4, RoleRead, effRead, 0, cmdGetRange, "Returns a substring of the string stored at a key.", keys(1, 1, 1))
	t.add("setrange", 4, RoleWrite, effWrite, 0, cmdSetRange, "Overwrites a part of a string value with another by an offset.", keys(1, 1, 1))
	t.add("substr", 4, RoleRead, effRead, 0, cmdGetRange, "Returns a substring from a string value.", keys(1, 1, 1),
		docs("1.0.0", "O(N) where N is the length of the returned string.", argKey("key"), argInt("start"), argInt("end")))
	t.add("lcs", -3, RoleRead, effRead, 0, cmdLCS, "Finds the longest common substring.", keys(1, 2, 1),
		docs("7.0.0", "O(N*M) where N and M are the lengths of s1 and s2, respectively",
			argKey("key1"), argKey("key2"), argToken("LEN"), argToken("IDX"),
			arg{Name: "min-match-len", Type: "integer", Token: "MINMATCHLEN", Optional: true}, argToken("WITHMATCHLEN")))
	// compare-and-set (SPEC §13): resp/compare.go; SET's IFEQ|IFNE|IFDEQ|IFDNE in cmdSet
	t.add("delex", -2, RoleWrite, effWrite, FlagFast, cmdDelEx, "Conditionally removes the specified key based on value or digest comparison.", keys(1, 1, 1),
		docs("8.4.0", "O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the string value", argKey("key"), condArgs()))
	t.add("digest", 2, RoleRead, effRead, FlagFast, cmdDigest, "Returns the XXH3 hash of a string value.", keys(1, 1, 1),
		docs("8.4.0", "O(N) where N is the length of the string value", argKey("key")))
	t.add("delifeq", 3, RoleWrite, effWrite, FlagFast, cmdDelIfEq, "Deletes the key if its value is equal to the given value.", keys(1, 1, 1),
		docs("9.0.0", "O(1)", argKey("key"), argString("value")))
}

// condArgs are the compare-and-set conditions of SET and DELEX.
// SET's come after its NX and XX (first).
func condArgs(first ...arg) arg {
	tok := func(token, name string) arg { return arg{Name: name, Type: "string", Token: token} }
	return argOneOf("condition", true, append(first, tok("IFEQ", "ifeq-value"), tok("IFNE", "ifne-value"),
		tok("IFDEQ", "ifdeq-digest"), tok("IFDNE", "ifdne-digest"))...)
}
