package resp

// scriptingRows adds the rows of resp/scripting.go: EVAL, EVALSHA, EVAL_RO,
// EVALSHA_RO, SCRIPT (SPEC §13). EVAL needs only the read role: each
// command inside is checked against the caller's.
func (t *tableBuilder) scriptingRows() {
	t.group = "scripting"
	t.add("eval", -3, RoleRead, effScript, FlagNoScript, cmdEval, "Executes a server-side Lua script.", evalDocs("2.6.0", "script"))
	t.add("evalsha", -3, RoleRead, effScript, FlagNoScript, cmdEvalSHA, "Executes a server-side Lua script by SHA1 digest.", evalDocs("2.6.0", "sha1"))
	t.add("eval_ro", -3, RoleRead, effRead|effScript, FlagNoScript, cmdEvalRO, "Executes a read-only server-side Lua script.", evalDocs("7.0.0", "script"))
	t.add("evalsha_ro", -3, RoleRead, effRead|effScript, FlagNoScript, cmdEvalSHARO, "Executes a read-only server-side Lua script by SHA1 digest.", evalDocs("7.0.0", "sha1"))
	scriptCmd := t.add("script", -2, RoleRead, effNone, FlagNoScript, nil, "A container for Lua scripts management commands.")
	t.sub(scriptCmd, "load", 3, RoleRead, effNone, FlagNoScript, cmdScriptLoad, "Loads a server-side Lua script to the script cache.")
	t.sub(scriptCmd, "exists", -3, RoleRead, effNone, FlagNoScript, cmdScriptExists, "Determines whether server-side Lua scripts exist in the script cache.")
	t.sub(scriptCmd, "flush", -2, RoleAdmin, effNone, FlagNoScript, cmdScriptFlush, "Removes all server-side Lua scripts from the script cache.")
	t.sub(scriptCmd, "kill", 2, RoleAdmin, effNone, FlagNoScript, cmdScriptKill, "Terminates a server-side Lua script during execution.")
	t.sub(scriptCmd, "help", 2, RoleRead, effNone, FlagNoScript, cmdScriptHelp, "Returns helpful text about the different subcommands.")
}

// evalDocs are the COMMAND DOCS of EVAL and its kin.
func evalDocs(since, first string) func(*command) {
	return docs(since, "Depends on the script that is executed.", argString(first), argInt("numkeys"),
		arg{Name: "key", Type: "key", Optional: true, Multiple: true}, arg{Name: "arg", Type: "string", Optional: true, Multiple: true})
}
