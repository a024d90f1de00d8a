package resp

// COMMAND DOCS fields beyond summary, since and group, for the rows that
// have them (the LOCK.* commands): complexity and arguments, in Redis 7's
// shape, so that redis-cli builds its hints from them ("LOCK.HOLD lock key
// reqid [TTL ms] [WAIT ms] [MAXHOLD ms]"). redis-cli reads every argument's
// type and wants its flags as simple strings.

// docsExtraFields counts the fields (key and value pairs) writeDocsExtra
// writes.
func docsExtraFields(cmd *command) int {
	n := 0
	if cmd.Complexity != "" {
		n++
	}
	if cmd.Args != nil {
		n++
	}
	return n
}

func (c *conn) writeDocsExtra(cmd *command) {
	if cmd.Complexity != "" {
		c.out.BulkString("complexity")
		c.out.BulkString(cmd.Complexity)
	}
	if cmd.Args != nil {
		c.out.BulkString("arguments")
		c.writeDocsArgs(cmd.Args)
	}
}

func (c *conn) writeDocsArgs(args []arg) {
	c.out.Array(len(args))
	for _, a := range args {
		var flags []string
		if a.Optional {
			flags = append(flags, "optional")
		}
		if a.Multiple {
			flags = append(flags, "multiple")
		}
		n := 2 // pairs
		if a.Token != "" {
			n++
		}
		if flags != nil {
			n++
		}
		if a.Args != nil {
			n++
		}
		c.out.Map(n)
		c.out.BulkString("name")
		c.out.BulkString(a.Name)
		c.out.BulkString("type")
		c.out.BulkString(a.Type)
		if a.Token != "" {
			c.out.BulkString("token")
			c.out.BulkString(a.Token)
		}
		if flags != nil {
			c.out.BulkString("flags")
			c.out.Set(len(flags))
			for _, f := range flags {
				c.out.Status(f)
			}
		}
		if a.Args != nil {
			c.out.BulkString("arguments")
			c.writeDocsArgs(a.Args)
		}
	}
}
