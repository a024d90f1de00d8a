package resp

// hashRows adds the rows of resp/hashes.go: HSET, HGET, HSCAN, … (SPEC §13).
func (t *tableBuilder) hashRows() {
	t.group = "hash"
	k1 := keys(1, 1, 1)
	t.add("hset", -4, RoleWrite, effWrite|effBatch, FlagFast, cmdHSet, "Creates or modifies the value of a field in a hash.", k1,
		docs("2.0.0", "O(1) for each field/value pair added", argKey("key"), arg{Name: "data", Type: "block", Multiple: true, Args: []arg{argString("field"), argString("value")}}))
	t.add("hmset", -4, RoleWrite, effWrite|effBatch, FlagFast, cmdHSet, "Sets the values of multiple fields.", k1,
		docs("2.0.0", "O(N) where N is the number of fields being set.", argKey("key"), arg{Name: "data", Type: "block", Multiple: true, Args: []arg{argString("field"), argString("value")}}))
	t.add("hsetnx", 4, RoleWrite, effWrite|effBatch, FlagFast, cmdHSetNX, "Sets the value of a field in a hash only when the field doesn't exist.", k1,
		docs("2.0.0", "O(1)", argKey("key"), argString("field"), argString("value")))
	t.add("hget", 3, RoleRead, effRead|effBatch, FlagFast, cmdHGet, "Returns the value of a field in a hash.", k1,
		docs("2.0.0", "O(1)", argKey("key"), argString("field")))
	t.add("hmget", -3, RoleRead, effRead|effBatch, FlagFast, cmdHMGet, "Returns the values of all fields in a hash.", k1,
		docs("2.0.0", "O(N) where N is the number of fields being requested.", argKey("key"), arg{Name: "field", Type: "string", Multiple: true}))
	t.add("hgetall", 2, RoleRead, effRead, 0, cmdHGetAll, "Returns all fields and values in a hash.", k1,
		docs("2.0.0", "O(N) where N is the size of the hash.", argKey("key")))
	t.add("hkeys", 2, RoleRead, effRead, 0, cmdHKeys, "Returns all fields in a hash.", k1,
		docs("2.0.0", "O(N) where N is the size of the hash.", argKey("key")))
	t.add("hvals", 2, RoleRead, effRead, 0, cmdHVals, "Returns all values in a hash.", k1,
		docs("2.0.0", "O(N) where N is the size of the hash.", argKey("key")))
	t.add("hlen", 2, RoleRead, effRead|effBatch, FlagFast, cmdHLen, "Returns the number of fields in a hash.", k1,
		docs("2.0.0", "O(1)", argKey("key")))
	t.add("hexists", 3, RoleRead, effRead|effBatch, FlagFast, cmdHExists, "Determines whether a field exists in a hash.", k1,
		docs("2.0.0", "O(1)", argKey("key"), argString("field")))
	t.add("hdel", -3, RoleWrite, effWrite|effBatch, FlagFast, cmdHDel, "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", k1,
		docs("2.0.0", "O(N) where N is the number of fields to be removed.", argKey("key"), arg{Name: "field", Type: "string", Multiple: true}))
	t.add("hincrby", 4, RoleWrite, effWrite|effBatch, FlagFast, cmdHIncrBy, "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", k1,
		docs("2.0.0", "O(1)", argKey("key"), argString("field"), argInt("increment")))
	t.add("hincrbyfloat", 4, RoleWrite, effWrite|effBatch, FlagFast, cmdHIncrByFloat, "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", k1,
		docs("2.6.0", "O(1)", argKey("key"), argString("field"), arg{Name: "increment", Type: "double"}))
	t.add("hstrlen", 3, RoleRead, effRead|effBatch, FlagFast, cmdHStrLen, "Returns the length of the value of a field.", k1,
		docs("3.2.0", "O(1)", argKey("key"), argString("field")))
	t.add("hrandfield", -2, RoleRead, effRead, 0, cmdHRandField, "Returns one or more random fields from a hash.", k1,
		docs("6.2.0", "O(N) where N is the number of fields returned", argKey("key"), arg{Name: "options", Type: "block", Optional: true, Args: []arg{argInt("count"), argToken("WITHVALUES")}}))
	t.add("hscan", -3, RoleRead, effRead, 0, cmdHScan, "Iterates over fields and values of a hash.", k1,
		docs("2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
			argKey("key"), argInt("cursor"), arg{Name: "pattern", Type: "pattern", Token: "MATCH", Optional: true}, argOption("COUNT", "count"), argToken("NOVALUES")))
}
