package resp

// listRows adds the rows of resp/lists.go and resp/sort.go: LPUSH, LRANGE, LMOVE,
// BLPOP, SORT, … (SPEC §13).
func (t *tableBuilder) listRows() {
	t.group = "list"
	W, R, B := effWrite, effRead, effWrite|effBlock
	t.add("lpush", -3, RoleWrite, W|effBatch, FlagFast, cmdLPush, "Prepends one or more elements to a list. Creates the key if it doesn't exist.", keys(1, 1, 1))
	t.add("rpush", -3, RoleWrite, W|effBatch, FlagFast, cmdRPush, "Appends one or more elements to a list. Creates the key if it doesn't exist.", keys(1, 1, 1))
	t.add("lpushx", -3, RoleWrite, W|effBatch, FlagFast, cmdLPushX, "Prepends one or more elements to a list only when the list exists.", keys(1, 1, 1))
	t.add("rpushx", -3, RoleWrite, W|effBatch, FlagFast, cmdRPushX, "Appends an element to a list only when the list exists.", keys(1, 1, 1))
	t.add("lpop", -2, RoleWrite, W|effBatch, FlagFast, cmdLPop, "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", keys(1, 1, 1))
	t.add("rpop", -2, RoleWrite, W|effBatch, FlagFast, cmdRPop, "Returns and removes the last elements of the list. Deletes the list if the last element was popped.", keys(1, 1, 1))
	t.add("llen", 2, RoleRead, R|effBatch, FlagFast, cmdLLen, "Returns the length of a list.", keys(1, 1, 1))
	t.add("lrange", 4, RoleRead, R, 0, cmdLRange, "Returns a range of elements from a list.", keys(1, 1, 1))
	t.add("lindex", 3, RoleRead, R|effBatch, 0, cmdLIndex, "Returns an element from a list by its index.", keys(1, 1, 1))
	t.add("lset", 4, RoleWrite, W|effBatch, 0, cmdLSet, "Sets the value of an element in a list by its index.", keys(1, 1, 1))
	t.add("linsert", 5, RoleWrite, W, 0, cmdLInsert, "Inserts an element before or after another element in a list.", keys(1, 1, 1))
	t.add("lrem", 4, RoleWrite, W, 0, cmdLRem, "Removes elements from a list. Deletes the list if the last element was removed.", keys(1, 1, 1))
	t.add("ltrim", 4, RoleWrite, W, 0, cmdLTrim, "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", keys(1, 1, 1))
	t.add("lpos", -3, RoleRead, R, 0, cmdLPos, "Returns the index of matching elements in a list.", keys(1, 1, 1))
	t.add("lmove", 5, RoleWrite, W, 0, cmdLMove, "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", keys(1, 2, 1))
	t.add("rpoplpush", 3, RoleWrite, W, 0, cmdRPopLPush, "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", keys(1, 2, 1))
	t.add("lmpop", -4, RoleWrite, W, 0, cmdLMPop, "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", keys(2, 2, 1))
	t.add("blpop", -3, RoleWrite, B, FlagNoScript, cmdBLPop, "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", keys(1, -2, 1))
	t.add("brpop", -3, RoleWrite, B, FlagNoScript, cmdBRPop, "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", keys(1, -2, 1))
	t.add("blmove", 6, RoleWrite, B, FlagNoScript, cmdBLMove, "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", keys(1, 2, 1))
	t.add("brpoplpush", 4, RoleWrite, B, FlagNoScript, cmdBRPopLPush, "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", keys(1, 2, 1))
	t.add("blmpop", -5, RoleWrite, B, 0, cmdBLMPop, "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", keys(3, 3, 1))
	t.add("sort", -2, RoleWrite, W, 0, cmdSort, "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", keys(1, 1, 1))
	t.add("sort_ro", -2, RoleRead, R, 0, cmdSortRO, "Returns the sorted elements of a list, a set, or a sorted set.", keys(1, 1, 1))
}
