package resp

// Commands lists every row of the command table, subcommands included, for
// the tests outside the package (the role matrix, the dispatch fuzzer).
func Commands() []*command { return commands() }
