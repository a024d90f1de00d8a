package resp

// pubsubRows adds the rows of resp/pubsub.go: SUBSCRIBE, PUBLISH, PUBSUB,
// … (SPEC §13). Subscribing reads, publishing writes (the roles of SPEC
// §5); none of it touches the keyspace.
func (t *tableBuilder) pubsubRows() {
	t.group = "pubsub"
	chans := func(name string) arg { return arg{Name: name, Type: "string", Multiple: true} }
	optChans := func(name string) arg { return arg{Name: name, Type: "string", Optional: true, Multiple: true} }
	t.add("subscribe", -2, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdSubscribe, "Listens for messages published to channels.",
		docs("2.0.0", "O(N) where N is the number of channels to subscribe to.", chans("channel")))
	t.add("psubscribe", -2, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdPSubscribe, "Listens for messages published to channels that match one or more patterns.",
		docs("2.0.0", "O(N) where N is the number of patterns to subscribe to.", chans("pattern")))
	t.add("ssubscribe", -2, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdSSubscribe, "Listens for messages published to shard channels.", keys(1, -1, 1),
		docs("7.0.0", "O(N) where N is the number of shard channels to subscribe to.", chans("shardchannel")))
	t.add("unsubscribe", -1, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdUnsubscribe, "Stops listening to messages posted to channels.",
		docs("2.0.0", "O(N) where N is the number of channels to unsubscribe.", optChans("channel")))
	t.add("punsubscribe", -1, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdPUnsubscribe, "Stops listening to messages published to channels that match one or more patterns.",
		docs("2.0.0", "O(N) where N is the number of patterns to unsubscribe.", optChans("pattern")))
	t.add("sunsubscribe", -1, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdSUnsubscribe, "Stops listening to messages posted to shard channels.", keys(1, -1, 1),
		docs("7.0.0", "O(N) where N is the number of shard channels to unsubscribe.", optChans("shardchannel")))
	t.add("publish", 3, RoleWrite, effWrite|effPubSub, FlagFast, cmdPublish, "Posts a message to a channel.",
		docs("2.0.0", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
			argString("channel"), argString("message")))
	t.add("spublish", 3, RoleWrite, effWrite|effPubSub, FlagFast, cmdSPublish, "Post a message to a shard channel", keys(1, 1, 1),
		docs("7.0.0", "O(N) where N is the number of clients subscribed to the receiving shard channel.",
			argString("shardchannel"), argString("message")))
	pubsubCmd := t.add("pubsub", -2, RoleRead, effRead|effPubSub, 0, nil, "A container for Pub/Sub commands.")
	t.sub(pubsubCmd, "channels", -2, RoleRead, effRead|effPubSub, 0, pubsubChannels(psChannel), "Returns the active channels.",
		docs("2.8.0", "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
			arg{Name: "pattern", Type: "pattern", Optional: true}))
	t.sub(pubsubCmd, "shardchannels", -2, RoleRead, effRead|effPubSub, 0, pubsubChannels(psShard), "Returns the active shard channels.",
		docs("7.0.0", "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
			arg{Name: "pattern", Type: "pattern", Optional: true}))
	t.sub(pubsubCmd, "numsub", -2, RoleRead, effRead|effPubSub, 0, pubsubNumSub(psChannel), "Returns a count of subscribers to channels.",
		docs("2.8.0", "O(N) for the NUMSUB subcommand, where N is the number of requested channels", optChans("channel")))
	t.sub(pubsubCmd, "shardnumsub", -2, RoleRead, effRead|effPubSub, 0, pubsubNumSub(psShard), "Returns the count of subscribers of shard channels.",
		docs("7.0.0", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", optChans("shardchannel")))
	t.sub(pubsubCmd, "numpat", 2, RoleRead, effRead|effPubSub, 0, cmdPubSubNumPat, "Returns a count of unique pattern subscriptions.", docs("2.8.0", "O(1)"))
	t.sub(pubsubCmd, "help", 2, RoleRead, effRead|effPubSub, 0, cmdPubSubHelp, "Returns helpful text about the different subcommands.", docs("6.2.0", "O(1)"))
}
