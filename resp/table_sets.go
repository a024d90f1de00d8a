package resp

// setRows adds the rows of resp/sets.go: SADD, SPOP, SINTER, SSCAN, … (SPEC §13).
func (t *tableBuilder) setRows() {
	t.group = "set"
	k1 := keys(1, 1, 1)
	many := arg{Name: "member", Type: "string", Multiple: true}
	manyKeys := arg{Name: "key", Type: "key", Multiple: true}
	t.add("sadd", -3, RoleWrite, effWrite|effBatch, FlagFast, cmdSAdd, "Adds one or more members to a set. Creates the key if it doesn't exist.", k1,
		docs("1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", argKey("key"), many))
	t.add("srem", -3, RoleWrite, effWrite|effBatch, FlagFast, cmdSRem, "Removes one or more members from a set. Deletes the set if the last member was removed.", k1,
		docs("1.0.0", "O(N) where N is the number of members to be removed.", argKey("key"), many))
	t.add("smembers", 2, RoleRead, effRead, 0, cmdSMembers, "Returns all members of a set.", k1,
		docs("1.0.0", "O(N) where N is the set cardinality.", argKey("key")))
	t.add("sismember", 3, RoleRead, effRead|effBatch, FlagFast, cmdSIsMember, "Determines whether a member belongs to a set.", k1,
		docs("1.0.0", "O(1)", argKey("key"), argString("member")))
	t.add("smismember", -3, RoleRead, effRead|effBatch, FlagFast, cmdSMIsMember, "Determines whether multiple members belong to a set.", k1,
		docs("6.2.0", "O(N) where N is the number of elements being checked for membership", argKey("key"), many))
	t.add("scard", 2, RoleRead, effRead|effBatch, FlagFast, cmdSCard, "Returns the number of members in a set.", k1,
		docs("1.0.0", "O(1)", argKey("key")))
	t.add("spop", -2, RoleWrite, effWrite, FlagFast, cmdSPop, "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", k1, drawnAs(spopEffect),
		docs("1.0.0", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.", argKey("key"), arg{Name: "count", Type: "integer", Optional: true}))
	t.add("srandmember", -2, RoleRead, effRead, 0, cmdSRandMember, "Get one or multiple random members from a set", k1,
		docs("1.0.0", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.", argKey("key"), arg{Name: "count", Type: "integer", Optional: true}))
	t.add("smove", 4, RoleWrite, effWrite, FlagFast, cmdSMove, "Moves a member from one set to another.", keys(1, 2, 1),
		docs("1.0.0", "O(1)", argKey("source"), argKey("destination"), argString("member")))
	t.add("sinter", -2, RoleRead, effRead, 0, cmdSInter, "Returns the intersect of multiple sets.", keys(1, -1, 1),
		docs("1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", manyKeys))
	t.add("sintercard", -3, RoleRead, effRead, 0, cmdSInterCard, "Returns the number of members of the intersect of multiple sets.", keys(2, 2, 1),
		docs("7.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", argInt("numkeys"), manyKeys, argOption("LIMIT", "limit")))
	t.add("sinterstore", -3, RoleWrite, effWrite, 0, cmdSInterStore, "Stores the intersect of multiple sets in a key.", keys(1, -1, 1),
		docs("1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", argKey("destination"), manyKeys))
	t.add("sunion", -2, RoleRead, effRead, 0, cmdSUnion, "Returns the union of multiple sets.", keys(1, -1, 1),
		docs("1.0.0", "O(N) where N is the total number of elements in all given sets.", manyKeys))
	t.add("sunionstore", -3, RoleWrite, effWrite, 0, cmdSUnionStore, "Stores the union of multiple sets in a key.", keys(1, -1, 1),
		docs("1.0.0", "O(N) where N is the total number of elements in all given sets.", argKey("destination"), manyKeys))
	t.add("sdiff", -2, RoleRead, effRead, 0, cmdSDiff, "Returns the difference of multiple sets.", keys(1, -1, 1),
		docs("1.0.0", "O(N) where N is the total number of elements in all given sets.", manyKeys))
	t.add("sdiffstore", -3, RoleWrite, effWrite, 0, cmdSDiffStore, "Stores the difference of multiple sets in a key.", keys(1, -1, 1),
		docs("1.0.0", "O(N) where N is the total number of elements in all given sets.", argKey("destination"), manyKeys))
	t.add("sscan", -3, RoleRead, effRead, 0, cmdSScan, "Iterates over members of a set.", k1,
		docs("2.0.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
			argKey("key"), argInt("cursor"), arg{Name: "pattern", Type: "pattern", Token: "MATCH", Optional: true}, argOption("COUNT", "count")))
}
