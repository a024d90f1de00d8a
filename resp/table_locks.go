package resp

// lockRows adds the rows of resp/locks.go, resp/lockwatch.go and resp/audit.go:
// LOCK.HOLD, RENEW, RELEASE, INFO, LIST, HOLDERS, WATCH, EVENTS, REVOKE.
//
// For a cluster client the key of a LOCK.* command is its lock name:
// HOLD, INFO, LIST, HOLDERS, WATCH and REVOKE name it first, so keys(1, 1, 1). A lock
// is one family of keys, and LOCK.LIST walks all of a lock's keys in one
// call, so all of them must live where one hash slot lives; hashing the
// lock name puts them there, and a hash tag in it ("{chat}summaries")
// places a lock beside the data its holders fence. RENEW and RELEASE
// name only a lease id, which is no key: a cluster client sends them to
// any node, and a node that does not lead answers -MOVED to the one
// that does (SPEC §10).
func (t *tableBuilder) lockRows() {
	t.group = "module"
	t.add("lock.hold", -4, RoleWrite, effWrite|effLocks|effBlock, 0, cmdLockHold, "Holds (lock, key) with a lease and a fence, waiting in line if it is held.", keys(1, 1, 1),
		docs(Version, "O(log N) where N is the number of leases and places in line.",
			argString("lock"), argString("key"), argString("reqid"),
			argOption("TTL", "ms"), argOption("WAIT", "ms"), argOption("MAXHOLD", "ms"),
			argOneOf("kind", true, arg{Name: "n", Type: "integer", Token: "LIMIT"}, argWord("SHARED")),
			arg{Name: "text", Type: "string", Token: "OWNER", Optional: true}))
	t.add("lock.renew", -2, RoleWrite, effWrite|effLocks, FlagFast, cmdLockRenew, "Moves a lease's deadline to now + ttl.",
		docs(Version, "O(log N) where N is the number of leases.", argString("leaseid"), argOption("TTL", "ms")))
	t.add("lock.release", 2, RoleWrite, effWrite|effLocks, FlagFast, cmdLockRelease, "Ends a lease now; the next in line is granted.",
		docs(Version, "O(log N) where N is the number of leases.", argString("leaseid")))
	t.add("lock.info", 3, RoleRead, effRead|effLocks, FlagFast, cmdLockInfo, "Shows the fence, ttl, waiters, holders, limit and owner of (lock, key); never a lease id.", keys(1, 1, 1),
		docs(Version, "O(1)", argString("lock"), argString("key")))
	t.add("lock.list", -2, RoleRead, effRead|effLocks, 0, cmdLockList, "Walks the held and waited-for keys of a lock, like SCAN; never a lease id.", keys(1, 1, 1),
		docs(Version, "O(log N + COUNT) for every call, N the number of keys held or waited for. O(N) for a complete walk.",
			argString("lock"), argOption("CURSOR", "cursor"), argOption("COUNT", "count")))
	t.add("lock.holders", 3, RoleRead, effRead|effLocks, 0, cmdLockHolders, "Lists every live lease of (lock, key), oldest first; never a lease id.", keys(1, 1, 1),
		docs(Version, "O(H) where H is the number of live leases of the key.", argString("lock"), argString("key")))
	t.add("lock.watch", -3, RoleRead, effRead|effLocks|effBlock, 0, cmdLockWatch, "Waits until the newest lease of (lock, key) is another than FENCE f, then shows the key as LOCK.INFO does; never a lease id.", keys(1, 1, 1),
		docs(Version, "O(1) to wait; O(W) for the change that answers W watchers of the key.",
			argString("lock"), argString("key"), argOption("FENCE", "f"), argOption("TIMEOUT", "ms")))
	t.add("lock.events", -1, RoleRead, effRead|effLocks, 0, cmdLockEvents, "Shows the newest lock events the audit keeps (grants, releases, expiries, revocations, losses, epochs), of one lock or of all, oldest first; never a lease id.",
		docs(Version, "O(N) where N is the number of events kept.", arg{Name: "lock", Type: "string", Optional: true}, argOption("COUNT", "count")))
	t.add("lock.revoke", -3, RoleAdmin, effWrite|effLocks, 0, cmdLockRevoke, "Ends the live leases of (lock, key) now, or only the one with FENCE f.", keys(1, 1, 1),
		docs(Version, "O(log N + H) where N is the number of leases and places in line, H the key's live leases.", argString("lock"), argString("key"), argOption("FENCE", "f")))
}
