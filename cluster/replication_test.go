package cluster_test

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// invocation is how TestClusterEveryRowReplicatesItsWrites runs one row of
// the command table on the leader: setup first, then the row itself.
type invocation struct {
	setup [][]any
	cmd   []any
	// cmdFrom, when set, makes the command from the last setup's reply
	// (LOCK.RENEW of the lease LOCK.HOLD granted).
	cmdFrom func(setupReply any) []any
	// errs: the row's reply is an error here, as Redis's would be.
	errs bool
	// locks: the row writes the lock module, whose leases stay on the
	// leader (SPEC §10): it writes no key.
	locks bool
	// queue: the row writes by the rows it runs (EXEC).
	queue bool
	// skip says why the row is not run here.
	skip string
}

// key is a key of the row name's own hash slot.
func key(row, k string) string { return "{" + row + "}" + k }

// representative has one invocation for every row of the command table:
// a row missing here fails the test, so that a new family's rows are
// proved to replicate what they write.
func representative(row string) (invocation, bool) {
	k, k2 := key(row, "k"), key(row, "k2")
	set := []any{"SET", k, "v"}
	hset := []any{"HSET", k, "f", "v", "g", "w"}
	sadd, sadd2 := []any{"SADD", k, "a", "b", "c"}, []any{"SADD", k2, "b", "c", "d"}
	zadd, zadd2 := []any{"ZADD", k, "1", "a", "2", "b", "3", "c"}, []any{"ZADD", k2, "2", "b", "5", "d"}
	rpush := []any{"RPUSH", k, "a", "b", "c", "b"}
	// No invocation below deletes a whole zset or list: the reclaim of
	// its generation runs in each node's background, at its own time,
	// and the keyspaces' bytes would differ until it has.
	later := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	m := map[string]invocation{
		// connection
		"ping":            {cmd: []any{"PING"}},
		"echo":            {cmd: []any{"ECHO", "x"}},
		"hello":           {cmd: []any{"HELLO", "2"}},
		"auth":            {cmd: []any{"AUTH", "pw"}, errs: true}, // no users file
		"quit":            {cmd: []any{"QUIT"}},
		"select":          {cmd: []any{"SELECT", "0"}},
		"reset":           {cmd: []any{"RESET"}},
		"client":          {skip: "a container: its subcommands are rows"},
		"client|id":       {cmd: []any{"CLIENT", "ID"}},
		"client|setname":  {cmd: []any{"CLIENT", "SETNAME", "x"}},
		"client|getname":  {cmd: []any{"CLIENT", "GETNAME"}},
		"client|setinfo":  {cmd: []any{"CLIENT", "SETINFO", "lib-name", "x"}},
		"client|info":     {cmd: []any{"CLIENT", "INFO"}},
		"client|list":     {cmd: []any{"CLIENT", "LIST"}},
		"client|kill":     {cmd: []any{"CLIENT", "KILL", "ID", "999999"}},
		"client|help":     {cmd: []any{"CLIENT", "HELP"}},
		"client|no-evict": {cmd: []any{"CLIENT", "NO-EVICT", "ON"}},
		"client|no-touch": {cmd: []any{"CLIENT", "NO-TOUCH", "ON"}},
		"client|reply":    {cmd: []any{"CLIENT", "REPLY", "ON"}},
		// server
		"info":                    {cmd: []any{"INFO"}},
		"command":                 {cmd: []any{"COMMAND"}},
		"command|count":           {cmd: []any{"COMMAND", "COUNT"}},
		"command|info":            {cmd: []any{"COMMAND", "INFO", "get"}},
		"command|docs":            {cmd: []any{"COMMAND", "DOCS", "get"}},
		"command|list":            {cmd: []any{"COMMAND", "LIST"}},
		"command|help":            {cmd: []any{"COMMAND", "HELP"}},
		"command|getkeys":         {cmd: []any{"COMMAND", "GETKEYS", "SET", k, "v"}},
		"command|getkeysandflags": {cmd: []any{"COMMAND", "GETKEYSANDFLAGS", "SET", k, "v"}},
		"config":                  {skip: "a container: its subcommands are rows"},
		"config|get":              {cmd: []any{"CONFIG", "GET", "maxclients"}},
		"config|set":              {cmd: []any{"CONFIG", "SET", "maxclients", "10000"}},
		"config|resetstat":        {cmd: []any{"CONFIG", "RESETSTAT"}},
		"config|help":             {cmd: []any{"CONFIG", "HELP"}},
		"dbsize":                  {cmd: []any{"DBSIZE"}},
		"flushdb":                 {setup: [][]any{set}, cmd: []any{"FLUSHDB"}},
		"flushall":                {setup: [][]any{set}, cmd: []any{"FLUSHALL"}},
		"time":                    {cmd: []any{"TIME"}},
		"shutdown":                {skip: "it stops the node"},
		"lastsave":                {cmd: []any{"LASTSAVE"}},
		"monitor":                 {cmd: []any{"MONITOR"}},
		"migrate":                 {skip: "refused in a cluster (resp/migrate.go): a write row is an entry every node would run"},
		// cluster
		"role":            {cmd: []any{"ROLE"}},
		"cluster":         {skip: "a container: its subcommands are rows"},
		"cluster|info":    {cmd: []any{"CLUSTER", "INFO"}},
		"cluster|slots":   {cmd: []any{"CLUSTER", "SLOTS"}},
		"cluster|shards":  {cmd: []any{"CLUSTER", "SHARDS"}},
		"cluster|nodes":   {cmd: []any{"CLUSTER", "NODES"}},
		"cluster|myid":    {cmd: []any{"CLUSTER", "MYID"}},
		"cluster|keyslot": {cmd: []any{"CLUSTER", "KEYSLOT", k}},
		"cluster|meet":    {skip: "it changes the voters: TestClusterMeetAndForget"},
		"cluster|forget":  {skip: "it changes the voters: TestClusterMeetAndForget"},
		"cluster|help":    {cmd: []any{"CLUSTER", "HELP"}},
		// strings
		"get":         {setup: [][]any{set}, cmd: []any{"GET", k}},
		"set":         {cmd: set},
		"setnx":       {cmd: []any{"SETNX", k, "v"}},
		"setex":       {cmd: []any{"SETEX", k, "3600", "v"}},
		"psetex":      {cmd: []any{"PSETEX", k, "3600000", "v"}},
		"getset":      {cmd: []any{"GETSET", k, "v"}},
		"getdel":      {setup: [][]any{set}, cmd: []any{"GETDEL", k}},
		"getex":       {setup: [][]any{set}, cmd: []any{"GETEX", k, "EX", "3600"}},
		"mget":        {setup: [][]any{set}, cmd: []any{"MGET", k, k2}},
		"mset":        {cmd: []any{"MSET", k, "v", k2, "w"}},
		"msetnx":      {cmd: []any{"MSETNX", k, "v", k2, "w"}},
		"incr":        {cmd: []any{"INCR", k}},
		"decr":        {cmd: []any{"DECR", k}},
		"incrby":      {cmd: []any{"INCRBY", k, "5"}},
		"decrby":      {cmd: []any{"DECRBY", k, "5"}},
		"incrbyfloat": {cmd: []any{"INCRBYFLOAT", k, "1.5"}},
		"append":      {cmd: []any{"APPEND", k, "v"}},
		"strlen":      {setup: [][]any{set}, cmd: []any{"STRLEN", k}},
		"getrange":    {setup: [][]any{set}, cmd: []any{"GETRANGE", k, "0", "-1"}},
		"setrange":    {cmd: []any{"SETRANGE", k, "3", "v"}},
		"substr":      {setup: [][]any{set}, cmd: []any{"SUBSTR", k, "0", "-1"}},
		"lcs":         {setup: [][]any{set}, cmd: []any{"LCS", k, k2}},
		"setbit":      {cmd: []any{"SETBIT", k, "7", "1"}},
		"delex":       {setup: [][]any{set}, cmd: []any{"DELEX", k, "IFEQ", "v"}},
		"digest":      {setup: [][]any{set}, cmd: []any{"DIGEST", k}},
		"delifeq":     {setup: [][]any{set}, cmd: []any{"DELIFEQ", k, "v"}},
		"getbit":      {setup: [][]any{set}, cmd: []any{"GETBIT", k, "7"}},
		"bitcount":    {setup: [][]any{set}, cmd: []any{"BITCOUNT", k}},
		"bitpos":      {setup: [][]any{set}, cmd: []any{"BITPOS", k, "1"}},
		"bitop":       {setup: [][]any{set}, cmd: []any{"BITOP", "NOT", k2, k}},
		// keys
		"del":         {setup: [][]any{set}, cmd: []any{"DEL", k}},
		"unlink":      {setup: [][]any{set}, cmd: []any{"UNLINK", k}},
		"exists":      {setup: [][]any{set}, cmd: []any{"EXISTS", k}},
		"expire":      {setup: [][]any{set}, cmd: []any{"EXPIRE", k, "3600"}},
		"pexpire":     {setup: [][]any{set}, cmd: []any{"PEXPIRE", k, "3600000"}},
		"expireat":    {setup: [][]any{set}, cmd: []any{"EXPIREAT", k, later}},
		"pexpireat":   {setup: [][]any{set}, cmd: []any{"PEXPIREAT", k, later + "000"}},
		"ttl":         {setup: [][]any{set}, cmd: []any{"TTL", k}},
		"pttl":        {setup: [][]any{set}, cmd: []any{"PTTL", k}},
		"persist":     {setup: [][]any{{"SET", k, "v", "EX", "3600"}}, cmd: []any{"PERSIST", k}},
		"type":        {setup: [][]any{set}, cmd: []any{"TYPE", k}},
		"keys":        {setup: [][]any{set}, cmd: []any{"KEYS", "*"}},
		"scan":        {setup: [][]any{set}, cmd: []any{"SCAN", "0"}},
		"rename":      {setup: [][]any{set}, cmd: []any{"RENAME", k, k2}},
		"renamenx":    {setup: [][]any{set}, cmd: []any{"RENAMENX", k, k2}},
		"touch":       {setup: [][]any{set}, cmd: []any{"TOUCH", k}},
		"expiretime":  {setup: [][]any{set}, cmd: []any{"EXPIRETIME", k}},
		"pexpiretime": {setup: [][]any{set}, cmd: []any{"PEXPIRETIME", k}},
		"randomkey":   {setup: [][]any{set}, cmd: []any{"RANDOMKEY"}},
		"copy":        {setup: [][]any{set}, cmd: []any{"COPY", k, k2}},
		"dump":        {setup: [][]any{hset}, cmd: []any{"DUMP", k}},
		// A relative TTL: each node counts it from the entry's instant.
		"restore": {setup: [][]any{hset, {"DUMP", k}},
			cmdFrom: func(r any) []any { return []any{"RESTORE", k2, "60000", r} }},
		"restore-asking": {setup: [][]any{set, {"DUMP", k}},
			cmdFrom: func(r any) []any { return []any{"RESTORE-ASKING", k, "0", r, "REPLACE"} }},
		"object":          {skip: "a container: its subcommands are rows"},
		"object|encoding": {setup: [][]any{set}, cmd: []any{"OBJECT", "ENCODING", k}},
		"object|freq":     {setup: [][]any{set}, cmd: []any{"OBJECT", "FREQ", k}, errs: true}, // no LFU policy
		"object|refcount": {setup: [][]any{set}, cmd: []any{"OBJECT", "REFCOUNT", k}},
		"object|help":     {cmd: []any{"OBJECT", "HELP"}},
		"bitfield":        {cmd: []any{"BITFIELD", k, "SET", "u8", "#1", "200", "INCRBY", "i5", "100", "1", "GET", "u4", "0"}},
		"bitfield_ro":     {setup: [][]any{set}, cmd: []any{"BITFIELD_RO", k, "GET", "u8", "0"}},
		"save":            {cmd: []any{"SAVE"}},
		"bgsave":          {cmd: []any{"BGSAVE", "SCHEDULE"}},
		"memory":          {skip: "a container: its subcommands are rows"},
		"memory|usage":    {setup: [][]any{hset}, cmd: []any{"MEMORY", "USAGE", k}},
		"memory|help":     {cmd: []any{"MEMORY", "HELP"}},
		// hashes and sets (SPEC §13)
		"hset":         {cmd: []any{"HSET", k, "f", "v", "g", "w"}},
		"hmset":        {cmd: []any{"HMSET", k, "f", "v"}},
		"hsetnx":       {cmd: []any{"HSETNX", k, "f", "v"}},
		"hget":         {setup: [][]any{hset}, cmd: []any{"HGET", k, "f"}},
		"hmget":        {setup: [][]any{hset}, cmd: []any{"HMGET", k, "f", "x"}},
		"hgetall":      {setup: [][]any{hset}, cmd: []any{"HGETALL", k}},
		"hkeys":        {setup: [][]any{hset}, cmd: []any{"HKEYS", k}},
		"hvals":        {setup: [][]any{hset}, cmd: []any{"HVALS", k}},
		"hlen":         {setup: [][]any{hset}, cmd: []any{"HLEN", k}},
		"hexists":      {setup: [][]any{hset}, cmd: []any{"HEXISTS", k, "f"}},
		"hdel":         {setup: [][]any{hset}, cmd: []any{"HDEL", k, "f"}},
		"hincrby":      {cmd: []any{"HINCRBY", k, "n", "5"}},
		"hincrbyfloat": {cmd: []any{"HINCRBYFLOAT", k, "n", "1.5"}},
		"hstrlen":      {setup: [][]any{hset}, cmd: []any{"HSTRLEN", k, "f"}},
		"hrandfield":   {setup: [][]any{hset}, cmd: []any{"HRANDFIELD", k, "2", "WITHVALUES"}},
		"hscan":        {setup: [][]any{hset}, cmd: []any{"HSCAN", k, "0"}},
		"sadd":         {cmd: []any{"SADD", k, "a", "b"}},
		"srem":         {setup: [][]any{sadd}, cmd: []any{"SREM", k, "a"}},
		"smembers":     {setup: [][]any{sadd}, cmd: []any{"SMEMBERS", k}},
		"sismember":    {setup: [][]any{sadd}, cmd: []any{"SISMEMBER", k, "a"}},
		"smismember":   {setup: [][]any{sadd}, cmd: []any{"SMISMEMBER", k, "a", "z"}},
		"scard":        {setup: [][]any{sadd}, cmd: []any{"SCARD", k}},
		"spop":         {setup: [][]any{sadd}, cmd: []any{"SPOP", k}},
		"srandmember":  {setup: [][]any{sadd}, cmd: []any{"SRANDMEMBER", k, "-3"}},
		"smove":        {setup: [][]any{sadd}, cmd: []any{"SMOVE", k, k2, "a"}},
		"sinter":       {setup: [][]any{sadd, sadd2}, cmd: []any{"SINTER", k, k2}},
		"sintercard":   {setup: [][]any{sadd, sadd2}, cmd: []any{"SINTERCARD", "2", k, k2, "LIMIT", "1"}},
		"sinterstore":  {setup: [][]any{sadd, sadd2}, cmd: []any{"SINTERSTORE", key(row, "d"), k, k2}},
		"sunion":       {setup: [][]any{sadd, sadd2}, cmd: []any{"SUNION", k, k2}},
		"sunionstore":  {setup: [][]any{sadd, sadd2}, cmd: []any{"SUNIONSTORE", key(row, "d"), k, k2}},
		"sdiff":        {setup: [][]any{sadd, sadd2}, cmd: []any{"SDIFF", k, k2}},
		"sdiffstore":   {setup: [][]any{sadd, sadd2}, cmd: []any{"SDIFFSTORE", key(row, "d"), k, k2}},
		"sscan":        {setup: [][]any{sadd}, cmd: []any{"SSCAN", k, "0", "COUNT", "1"}},
		// sorted sets and lists (SPEC §13)
		"zadd":             {cmd: []any{"ZADD", k, "GT", "CH", "1", "a", "2", "b"}},
		"zincrby":          {setup: [][]any{zadd}, cmd: []any{"ZINCRBY", k, "2.5", "a"}},
		"zrem":             {setup: [][]any{zadd}, cmd: []any{"ZREM", k, "a", "x"}},
		"zcard":            {setup: [][]any{zadd}, cmd: []any{"ZCARD", k}},
		"zcount":           {setup: [][]any{zadd}, cmd: []any{"ZCOUNT", k, "(1", "+inf"}},
		"zlexcount":        {setup: [][]any{zadd}, cmd: []any{"ZLEXCOUNT", k, "-", "[b"}},
		"zscore":           {setup: [][]any{zadd}, cmd: []any{"ZSCORE", k, "b"}},
		"zmscore":          {setup: [][]any{zadd}, cmd: []any{"ZMSCORE", k, "b", "x"}},
		"zrank":            {setup: [][]any{zadd}, cmd: []any{"ZRANK", k, "c"}},
		"zrevrank":         {setup: [][]any{zadd}, cmd: []any{"ZREVRANK", k, "c"}},
		"zrange":           {setup: [][]any{zadd}, cmd: []any{"ZRANGE", k, "+inf", "(1", "BYSCORE", "REV", "LIMIT", "0", "1", "WITHSCORES"}},
		"zrangestore":      {setup: [][]any{zadd}, cmd: []any{"ZRANGESTORE", k2, k, "0", "1"}},
		"zrevrange":        {setup: [][]any{zadd}, cmd: []any{"ZREVRANGE", k, "0", "-1"}},
		"zrangebyscore":    {setup: [][]any{zadd}, cmd: []any{"ZRANGEBYSCORE", k, "-inf", "2"}},
		"zrevrangebyscore": {setup: [][]any{zadd}, cmd: []any{"ZREVRANGEBYSCORE", k, "2", "-inf"}},
		"zrangebylex":      {setup: [][]any{zadd}, cmd: []any{"ZRANGEBYLEX", k, "[a", "(c"}},
		"zrevrangebylex":   {setup: [][]any{zadd}, cmd: []any{"ZREVRANGEBYLEX", k, "+", "-"}},
		"zremrangebyrank":  {setup: [][]any{zadd}, cmd: []any{"ZREMRANGEBYRANK", k, "0", "0"}},
		"zremrangebyscore": {setup: [][]any{zadd}, cmd: []any{"ZREMRANGEBYSCORE", k, "2", "3"}},
		"zremrangebylex":   {setup: [][]any{zadd}, cmd: []any{"ZREMRANGEBYLEX", k, "-", "[a"}},
		"zpopmin":          {setup: [][]any{zadd}, cmd: []any{"ZPOPMIN", k, "2"}},
		"zpopmax":          {setup: [][]any{zadd}, cmd: []any{"ZPOPMAX", k}},
		"zmpop":            {setup: [][]any{zadd}, cmd: []any{"ZMPOP", "2", k2, k, "MAX", "COUNT", "2"}},
		"bzpopmin":         {setup: [][]any{zadd}, cmd: []any{"BZPOPMIN", k2, k, "0"}},
		"bzpopmax":         {setup: [][]any{zadd}, cmd: []any{"BZPOPMAX", k, "1"}},
		"bzmpop":           {setup: [][]any{zadd}, cmd: []any{"BZMPOP", "0", "1", k, "MIN", "COUNT", "2"}},
		"zrandmember":      {setup: [][]any{zadd}, cmd: []any{"ZRANDMEMBER", k}},
		"zunion":           {setup: [][]any{zadd, zadd2}, cmd: []any{"ZUNION", "2", k, k2, "WITHSCORES"}},
		"zinter":           {setup: [][]any{zadd, zadd2}, cmd: []any{"ZINTER", "2", k, k2, "AGGREGATE", "MAX"}},
		"zdiff":            {setup: [][]any{zadd, zadd2}, cmd: []any{"ZDIFF", "2", k, k2}},
		"zunionstore":      {setup: [][]any{zadd, zadd2}, cmd: []any{"ZUNIONSTORE", key(row, "d"), "2", k, k2, "WEIGHTS", "2", "3"}},
		"zinterstore":      {setup: [][]any{zadd, zadd2}, cmd: []any{"ZINTERSTORE", key(row, "d"), "2", k, k2}},
		"zdiffstore":       {setup: [][]any{zadd, zadd2}, cmd: []any{"ZDIFFSTORE", key(row, "d"), "2", k, k2}},
		"zintercard":       {setup: [][]any{zadd, zadd2}, cmd: []any{"ZINTERCARD", "2", k, k2}},
		"zscan":            {setup: [][]any{zadd}, cmd: []any{"ZSCAN", k, "0"}},
		"lpush":            {cmd: []any{"LPUSH", k, "a", "b"}},
		"rpush":            {cmd: rpush},
		"lpushx":           {setup: [][]any{rpush}, cmd: []any{"LPUSHX", k, "z"}},
		"rpushx":           {setup: [][]any{rpush}, cmd: []any{"RPUSHX", k, "z"}},
		"lpop":             {setup: [][]any{rpush}, cmd: []any{"LPOP", k}},
		"rpop":             {setup: [][]any{rpush}, cmd: []any{"RPOP", k, "2"}},
		"llen":             {setup: [][]any{rpush}, cmd: []any{"LLEN", k}},
		"lrange":           {setup: [][]any{rpush}, cmd: []any{"LRANGE", k, "0", "-1"}},
		"lindex":           {setup: [][]any{rpush}, cmd: []any{"LINDEX", k, "-1"}},
		"lset":             {setup: [][]any{rpush}, cmd: []any{"LSET", k, "1", "x"}},
		"linsert":          {setup: [][]any{rpush}, cmd: []any{"LINSERT", k, "BEFORE", "c", "x"}},
		"lrem":             {setup: [][]any{rpush}, cmd: []any{"LREM", k, "-1", "b"}},
		"ltrim":            {setup: [][]any{rpush}, cmd: []any{"LTRIM", k, "1", "2"}},
		"lpos":             {setup: [][]any{rpush}, cmd: []any{"LPOS", k, "b", "RANK", "-1", "COUNT", "0"}},
		"lmove":            {setup: [][]any{rpush}, cmd: []any{"LMOVE", k, k2, "LEFT", "RIGHT"}},
		"rpoplpush":        {setup: [][]any{rpush}, cmd: []any{"RPOPLPUSH", k, k}},
		"lmpop":            {setup: [][]any{rpush}, cmd: []any{"LMPOP", "2", k2, k, "RIGHT", "COUNT", "3"}},
		"blpop":            {setup: [][]any{rpush}, cmd: []any{"BLPOP", k2, k, "0"}},
		"brpop":            {setup: [][]any{rpush}, cmd: []any{"BRPOP", k, "1"}},
		"blmove":           {setup: [][]any{rpush}, cmd: []any{"BLMOVE", k, k2, "RIGHT", "LEFT", "0"}},
		"brpoplpush":       {setup: [][]any{rpush}, cmd: []any{"BRPOPLPUSH", k, k2, "0"}},
		"blmpop":           {setup: [][]any{rpush}, cmd: []any{"BLMPOP", "0", "1", k, "LEFT"}},
		"sort":             {setup: [][]any{rpush}, cmd: []any{"SORT", k, "ALPHA", "DESC", "LIMIT", "0", "3", "STORE", k2}},
		"sort_ro":          {setup: [][]any{zadd}, cmd: []any{"SORT_RO", k, "BY", "nosort", "GET", "#"}},
		"client|unblock":   {cmd: []any{"CLIENT", "UNBLOCK", "999999"}},
		// transactions
		"multi":   {cmd: []any{"MULTI"}},
		"exec":    {setup: [][]any{{"MULTI"}, set}, cmd: []any{"EXEC"}, queue: true},
		"discard": {setup: [][]any{{"MULTI"}, set}, cmd: []any{"DISCARD"}},
		"watch":   {cmd: []any{"WATCH", k}},
		"unwatch": {setup: [][]any{{"WATCH", k}}, cmd: []any{"UNWATCH"}},
		// pub/sub: served by the leader, never through the log (SPEC §13)
		"subscribe":            {cmd: []any{"SUBSCRIBE", "ch"}},
		"psubscribe":           {cmd: []any{"PSUBSCRIBE", "ch*"}},
		"ssubscribe":           {cmd: []any{"SSUBSCRIBE", k}},
		"unsubscribe":          {cmd: []any{"UNSUBSCRIBE", "ch"}},
		"punsubscribe":         {cmd: []any{"PUNSUBSCRIBE", "ch*"}},
		"sunsubscribe":         {cmd: []any{"SUNSUBSCRIBE", k}},
		"publish":              {cmd: []any{"PUBLISH", "ch", "hello"}},
		"spublish":             {cmd: []any{"SPUBLISH", k, "hello"}},
		"pubsub":               {skip: "a container: its subcommands are rows"},
		"pubsub|channels":      {cmd: []any{"PUBSUB", "CHANNELS"}},
		"pubsub|shardchannels": {cmd: []any{"PUBSUB", "SHARDCHANNELS"}},
		"pubsub|numsub":        {cmd: []any{"PUBSUB", "NUMSUB", "ch"}},
		"pubsub|shardnumsub":   {cmd: []any{"PUBSUB", "SHARDNUMSUB", k}},
		"pubsub|numpat":        {cmd: []any{"PUBSUB", "NUMPAT"}},
		"pubsub|help":          {cmd: []any{"PUBSUB", "HELP"}},
		// locks
		// scripting: a script writes by the rows it runs, as EXEC does,
		// through the log as one entry (LOCK-18).
		"eval": {cmd: []any{"EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", k, "v"}, queue: true},
		"evalsha": {setup: [][]any{{"SCRIPT", "LOAD", "return redis.call('SET', KEYS[1], ARGV[1])"}}, queue: true,
			cmdFrom: func(sha any) []any { return []any{"EVALSHA", sha, "1", k, "v"} }},
		"eval_ro": {setup: [][]any{set}, cmd: []any{"EVAL_RO", "return redis.call('GET', KEYS[1])", "1", k}},
		"evalsha_ro": {setup: [][]any{set, {"SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])"}},
			cmdFrom: func(sha any) []any { return []any{"EVALSHA_RO", sha, "1", k} }},
		"script":        {skip: "a container: its subcommands are rows"},
		"script|load":   {cmd: []any{"SCRIPT", "LOAD", "return 1"}},
		"script|exists": {cmd: []any{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}},
		"script|flush":  {cmd: []any{"SCRIPT", "FLUSH"}},
		"script|kill":   {cmd: []any{"SCRIPT", "KILL"}, errs: true}, // NOTBUSY
		"script|help":   {cmd: []any{"SCRIPT", "HELP"}},
		"lock.hold":     {cmd: []any{"LOCK.HOLD", "jobs", k, row, "TTL", "60000"}, locks: true},
		"lock.renew": {setup: [][]any{{"LOCK.HOLD", "jobs", k, row, "TTL", "60000"}}, locks: true,
			cmdFrom: func(r any) []any { return []any{"LOCK.RENEW", r.([]any)[0], "TTL", "60000"} }},
		"lock.release": {setup: [][]any{{"LOCK.HOLD", "jobs", k, row, "TTL", "60000"}}, locks: true,
			cmdFrom: func(r any) []any { return []any{"LOCK.RELEASE", r.([]any)[0]} }},
		"lock.info":    {setup: [][]any{{"LOCK.HOLD", "jobs", k, row, "TTL", "60000"}}, cmd: []any{"LOCK.INFO", "jobs", k}},
		"lock.list":    {setup: [][]any{{"LOCK.HOLD", "jobs", k, row, "TTL", "60000"}}, cmd: []any{"LOCK.LIST", "jobs"}},
		"lock.watch":   {setup: [][]any{{"LOCK.HOLD", "jobs", k, row, "TTL", "60000"}}, cmd: []any{"LOCK.WATCH", "jobs", k}},
		"lock.holders": {setup: [][]any{{"LOCK.HOLD", "jobs", k, row, "TTL", "60000", "LIMIT", "2", "OWNER", "w-1"}}, cmd: []any{"LOCK.HOLDERS", "jobs", k}},
		"lock.events":  {setup: [][]any{{"LOCK.HOLD", "jobs", k, row, "TTL", "60000"}}, cmd: []any{"LOCK.EVENTS", "jobs", "COUNT", "5"}},
		"lock.revoke":  {setup: [][]any{{"LOCK.HOLD", "jobs", k, row, "TTL", "60000"}}, cmd: []any{"LOCK.REVOKE", "jobs", k}, locks: true},
	}
	inv, ok := m[row]
	return inv, ok
}

// SPEC §10: every keyspace write goes through the log, and a row of the
// command table is replicated by what it says it does (resp/table.go), not
// by a list kept apart. So every row, as the leader lists it (COMMAND
// LIST, COMMAND INFO's flags), is run on the leader by a representative
// invocation; then a follower's keyspace must be the leader's, record for
// record. A row that says "write" must have changed the keyspace (its
// invocation is representative), unless its writes are the lock module's,
// which stay on the leader; a row that does not say "write" must not have
// (it would have written the leader's keyspace alone). A row with no
// invocation here fails: a new family cannot be forgotten.
func TestClusterEveryRowReplicatesItsWrites(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	rows, err := tc.client(l).Do(ctx, "COMMAND", "LIST").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	writes := 0
	snapshot := func(i int) []byte {
		t.Helper()
		b, err := tc.nodes[i].db.Node().KeyspaceSnapshot()
		if err != nil {
			t.Fatalf("snapshot of %s: %v", tc.nodes[i].id, err)
		}
		return b
	}
	// leaderless: an error that says this node no longer leads. A loaded
	// machine may see an election mid-test; the row is then run again on
	// the new leader.
	leaderless := func(err error) bool {
		return err != nil && (strings.HasPrefix(err.Error(), "CLUSTERDOWN") ||
			strings.HasPrefix(err.Error(), "MOVED") || strings.HasPrefix(err.Error(), "TRYAGAIN") ||
			strings.Contains(err.Error(), "leadership lost"))
	}
	// run runs one row's invocation on the leader l and checks a follower;
	// it reports false when leadership moved while it ran.
	run := func(row string, inv invocation, l int) bool {
		f := (l + 1) % len(tc.nodes)
		info, err := tc.client(l).Do(ctx, "COMMAND", "INFO", row).Slice()
		if leaderless(err) {
			return false
		}
		if err != nil || len(info) != 1 || info[0] == nil {
			t.Fatalf("COMMAND INFO %s: %v %v", row, info, err)
		}
		write := false
		for _, fl := range info[0].([]any)[2].([]any) {
			write = write || fl == "write"
		}
		// One connection per row, so that MULTI and WATCH hold across its
		// setup and itself.
		c := redis.NewClient(&redis.Options{Addr: tc.nodes[l].addr, MaxRetries: -1, Protocol: 2, PoolSize: 1})
		defer c.Close()
		var last any
		for _, s := range inv.setup {
			last, err = c.Do(ctx, s...).Result()
			if leaderless(err) {
				return false
			}
			if err != nil && err != redis.Nil {
				t.Fatalf("%s: setup %v: %v", row, s, err)
			}
		}
		tc.caughtUp(l)
		before := snapshot(l)
		if len(inv.setup) > 0 && !bytes.Equal(before, snapshot(f)) {
			// What follows would differ too: the first culprit is enough.
			t.Fatalf("%s: after its setup %v, the follower's keyspace is not the leader's", row, inv.setup)
		}
		cmd := inv.cmd
		if inv.cmdFrom != nil {
			cmd = inv.cmdFrom(last)
		}
		err = c.Do(ctx, cmd...).Err()
		if leaderless(err) && !tc.nodes[l].db.Node().LocksReady() {
			return false
		}
		if err != nil && err != redis.Nil && !inv.errs {
			t.Errorf("%s: %v: %v", row, cmd, err)
		}
		tc.caughtUp(l)
		after, follower := snapshot(l), snapshot(f)
		changed := !bytes.Equal(before, after)
		switch {
		case !bytes.Equal(after, follower):
			t.Fatalf("%s: after %v, the follower's keyspace is not the leader's", row, cmd)
		case write && !inv.locks && !changed:
			t.Errorf("%s: says it writes, but %v changed no key: make its invocation write", row, cmd)
		case (!write || inv.locks) && !inv.queue && changed:
			t.Errorf("%s: %v changed the keyspace, but its row does not say it writes keys", row, cmd)
		}
		if write && !inv.locks {
			writes++
		}
		return true
	}
	for _, row := range rows {
		inv, ok := representative(row)
		switch {
		case !ok:
			t.Errorf("%s: no representative invocation: add one to representative", row)
			continue
		case inv.skip != "":
			continue
		}
		for attempt := 0; !run(row, inv, l); attempt++ {
			if attempt == 5 {
				t.Fatalf("%s: the leader kept changing; logs:\n%s", row, tc.log.String())
			}
			l = tc.leader(5 * time.Second)
		}
	}
	if t.Failed() {
		t.Logf("logs:\n%s", tc.log.String())
	}
	if writes < 25 {
		t.Errorf("%d rows that write keys, want them all (25 or more)", writes)
	}
}
