package resp

// transactionRows adds the rows of resp/transactions.go: MULTI, EXEC, DISCARD, WATCH,
// UNWATCH.
func (t *tableBuilder) transactionRows() {
	t.group = "transactions"
	t.add("multi", 1, RoleRead, effNone, FlagFast|FlagNotQueued, cmdMulti, "Starts a transaction.")
	t.add("exec", 1, RoleRead, effQueue, FlagNotQueued, cmdExec, "Executes all commands in a transaction.")
	t.add("discard", 1, RoleRead, effNone, FlagFast|FlagNotQueued, cmdDiscard, "Discards a transaction.")
	t.add("watch", -2, RoleRead, effNone, FlagFast|FlagNotQueued, cmdWatch, "Monitors changes to keys to determine the execution of a transaction.", keys(1, -1, 1))
	t.add("unwatch", 1, RoleRead, effNone, FlagFast, cmdUnwatch, "Forgets about watched keys of a transaction.")
}
