package resp

// bitmapRows adds the rows of resp/bitmaps.go: SETBIT, BITCOUNT, BITFIELD, BITOP, …
func (t *tableBuilder) bitmapRows() {
	t.group = "bitmap"
	t.add("setbit", 4, RoleWrite, effWrite, 0, cmdSetBit, "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", keys(1, 1, 1),
		docs("2.2.0", "O(1)", argKey("key"), argInt("offset"), argInt("value")))
	t.add("getbit", 3, RoleRead, effRead, FlagFast, cmdGetBit, "Returns a bit value by offset.", keys(1, 1, 1),
		docs("2.2.0", "O(1)", argKey("key"), argInt("offset")))
	t.add("bitcount", -2, RoleRead, effRead, 0, cmdBitCount, "Counts the number of set bits (population counting) in a string.", keys(1, 1, 1),
		docs("2.6.0", "O(N)", argKey("key"), bitRangeArgs()))
	t.add("bitpos", -3, RoleRead, effRead, 0, cmdBitPos, "Finds the first set (1) or clear (0) bit in a string.", keys(1, 1, 1),
		docs("2.8.7", "O(N)", argKey("key"), argInt("bit"), arg{Name: "range", Type: "block", Optional: true, Args: []arg{
			argInt("start"), {Name: "end-unit-block", Type: "block", Optional: true, Args: []arg{argInt("end"), bitRangeArgs().Args[2]}}}}))
	t.add("bitfield", -2, RoleWrite, effWrite, 0, cmdBitfield, "Performs arbitrary bitfield integer operations on strings.", keys(1, 1, 1),
		docs("3.2.0", "O(1) for each subcommand specified", argKey("key"), arg{Name: "operation", Type: "oneof", Optional: true, Multiple: true, Args: []arg{
			{Name: "get-block", Type: "block", Token: "GET", Args: []arg{argString("encoding"), argInt("offset")}},
			{Name: "write", Type: "block", Args: []arg{
				{Name: "overflow-block", Type: "oneof", Token: "OVERFLOW", Optional: true, Args: []arg{argWord("WRAP"), argWord("SAT"), argWord("FAIL")}},
				{Name: "write-operation", Type: "oneof", Args: []arg{
					{Name: "set-block", Type: "block", Token: "SET", Args: []arg{argString("encoding"), argInt("offset"), argInt("value")}},
					{Name: "incrby-block", Type: "block", Token: "INCRBY", Args: []arg{argString("encoding"), argInt("offset"), argInt("increment")}}}}}}}}))
	t.add("bitfield_ro", -2, RoleRead, effRead, FlagFast, cmdBitfieldRO, "Performs arbitrary read-only bitfield integer operations on strings.", keys(1, 1, 1),
		docs("6.0.0", "O(1) for each subcommand specified", argKey("key"), arg{Name: "get-block", Type: "block", Token: "GET", Optional: true, Multiple: true, Args: []arg{argString("encoding"), argInt("offset")}}))
	t.add("bitop", -4, RoleWrite, effWrite, 0, cmdBitOp, "Performs bitwise operations on multiple strings, and stores the result.", keys(2, -1, 1),
		docs("2.6.0", "O(N)", argOneOf("operation", false, argWord("AND"), argWord("OR"),
			argWord("XOR"), argWord("NOT")),
			argKey("destkey"), arg{Name: "key", Type: "key", Multiple: true}))
}

// bitRangeArgs are BITCOUNT's [start end [BYTE|BIT]].
func bitRangeArgs() arg {
	return arg{Name: "range", Type: "block", Optional: true, Args: []arg{argInt("start"), argInt("end"),
		argOneOf("unit", true, argWord("BYTE"), argWord("BIT"))}}
}
