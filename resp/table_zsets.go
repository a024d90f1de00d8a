package resp

// zsetRows adds the rows of resp/zsets.go: ZADD, ZRANGE, ZMPOP, BZPOPMIN, … (SPEC §13).
func (t *tableBuilder) zsetRows() {
	t.group = "sorted-set"
	W, R, B := effWrite, effRead, effWrite|effBlock
	t.add("zadd", -4, RoleWrite, W|effBatch, FlagFast, cmdZAdd, "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", keys(1, 1, 1),
		docs("1.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.", argKey("key"),
			argOneOf("condition", true, argWord("NX"), argWord("XX")), argOneOf("comparison", true, argWord("GT"), argWord("LT")),
			argToken("CH"), argToken("INCR"), arg{Name: "data", Type: "block", Multiple: true, Args: []arg{argString("score"), argString("member")}}))
	t.add("zincrby", 4, RoleWrite, W|effBatch, FlagFast, cmdZIncrBy, "Increments the score of a member in a sorted set.", keys(1, 1, 1))
	t.add("zrem", -3, RoleWrite, W|effBatch, FlagFast, cmdZRem, "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", keys(1, 1, 1))
	t.add("zcard", 2, RoleRead, R|effBatch, FlagFast, cmdZCard, "Returns the number of members in a sorted set.", keys(1, 1, 1))
	t.add("zcount", 4, RoleRead, R, FlagFast, cmdZCount, "Returns the count of members in a sorted set that have scores within a range.", keys(1, 1, 1))
	t.add("zlexcount", 4, RoleRead, R, FlagFast, cmdZLexCount, "Returns the number of members in a sorted set within a lexicographical range.", keys(1, 1, 1))
	t.add("zscore", 3, RoleRead, R|effBatch, FlagFast, cmdZScore, "Returns the score of a member in a sorted set.", keys(1, 1, 1))
	t.add("zmscore", -3, RoleRead, R|effBatch, FlagFast, cmdZMScore, "Returns the score of one or more members in a sorted set.", keys(1, 1, 1))
	t.add("zrank", 3, RoleRead, R, FlagFast, cmdZRank, "Returns the index of a member in a sorted set ordered by ascending scores.", keys(1, 1, 1))
	t.add("zrevrank", 3, RoleRead, R, FlagFast, cmdZRevRank, "Returns the index of a member in a sorted set ordered by descending scores.", keys(1, 1, 1))
	t.add("zrange", -4, RoleRead, R, 0, cmdZRange, "Returns members in a sorted set within a range of indexes.", keys(1, 1, 1),
		docs("1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
			argKey("key"), argString("start"), argString("stop"), argOneOf("sortby", true, argWord("BYSCORE"), argWord("BYLEX")), argToken("REV"),
			arg{Name: "limit", Type: "block", Token: "LIMIT", Optional: true, Args: []arg{argInt("offset"), argInt("count")}}, argToken("WITHSCORES")))
	t.add("zrangestore", -5, RoleWrite, W, 0, cmdZRangeStore, "Stores a range of members from sorted set in a key.", keys(1, 2, 1))
	t.add("zrevrange", -4, RoleRead, R, 0, cmdZRevRange, "Returns members in a sorted set within a range of indexes in reverse order.", keys(1, 1, 1))
	t.add("zrangebyscore", -4, RoleRead, R, 0, cmdZRangeByScore, "Returns members in a sorted set within a range of scores.", keys(1, 1, 1))
	t.add("zrevrangebyscore", -4, RoleRead, R, 0, cmdZRevRangeByScore, "Returns members in a sorted set within a range of scores in reverse order.", keys(1, 1, 1))
	t.add("zrangebylex", -4, RoleRead, R, 0, cmdZRangeByLex, "Returns members in a sorted set within a lexicographical range.", keys(1, 1, 1))
	t.add("zrevrangebylex", -4, RoleRead, R, 0, cmdZRevRangeByLex, "Returns members in a sorted set within a lexicographical range in reverse order.", keys(1, 1, 1))
	t.add("zremrangebyrank", 4, RoleWrite, W, 0, cmdZRemRangeByRank, "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", keys(1, 1, 1))
	t.add("zremrangebyscore", 4, RoleWrite, W, 0, cmdZRemRangeByScore, "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", keys(1, 1, 1))
	t.add("zremrangebylex", 4, RoleWrite, W, 0, cmdZRemRangeByLex, "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", keys(1, 1, 1))
	t.add("zpopmin", -2, RoleWrite, W|effBatch, FlagFast, cmdZPopMin, "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", keys(1, 1, 1))
	t.add("zpopmax", -2, RoleWrite, W|effBatch, FlagFast, cmdZPopMax, "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", keys(1, 1, 1))
	t.add("zmpop", -4, RoleWrite, W, 0, cmdZMPop, "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", keys(2, 2, 1))
	t.add("bzpopmin", -3, RoleWrite, B, FlagFast|FlagNoScript, cmdBZPopMin, "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", keys(1, -2, 1))
	t.add("bzpopmax", -3, RoleWrite, B, FlagFast|FlagNoScript, cmdBZPopMax, "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", keys(1, -2, 1))
	t.add("bzmpop", -5, RoleWrite, B, 0, cmdBZMPop, "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", keys(3, 3, 1))
	t.add("zrandmember", -2, RoleRead, R, 0, cmdZRandMember, "Returns one or more random members from a sorted set.", keys(1, 1, 1))
	t.add("zunion", -3, RoleRead, R, 0, cmdZUnion, "Returns the union of multiple sorted sets.", keys(2, 2, 1))
	t.add("zinter", -3, RoleRead, R, 0, cmdZInter, "Returns the intersect of multiple sorted sets.", keys(2, 2, 1))
	t.add("zdiff", -3, RoleRead, R, 0, cmdZDiff, "Returns the difference between multiple sorted sets.", keys(2, 2, 1))
	t.add("zunionstore", -4, RoleWrite, W, 0, cmdZUnionStore, "Stores the union of multiple sorted sets in a key.", keys(1, 1, 1))
	t.add("zinterstore", -4, RoleWrite, W, 0, cmdZInterStore, "Stores the intersect of multiple sorted sets in a key.", keys(1, 1, 1))
	t.add("zdiffstore", -4, RoleWrite, W, 0, cmdZDiffStore, "Stores the difference of multiple sorted sets in a key.", keys(1, 1, 1))
	t.add("zintercard", -3, RoleRead, R, 0, cmdZInterCard, "Returns the number of members of the intersect of multiple sorted sets.", keys(2, 2, 1))
	t.add("zscan", -3, RoleRead, R, 0, cmdZScan, "Iterates over members and scores of a sorted set.", keys(1, 1, 1))
}
