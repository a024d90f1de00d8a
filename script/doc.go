// Package script runs Redis scripts: Lua 5.1 (on gopher-lua) with Redis 7's
// redis.* API, KEYS and ARGV, its conversions between Lua values and RESP2
// or RESP3 replies, the libraries Redis bundles (cjson, bit, struct,
// cmsgpack), and its sandbox: no file, OS or module access, and globals and
// library tables that a script can neither add to nor change.
//
// It knows nothing of the server: a script's redis.call reaches it through
// Caller, an interface this package defines, with replies in Reply, a value
// type this package defines. It is not the script cache, the commands that
// run scripts, nor what makes a script atomic: that is the server's
// (resp/scripting.go).
package script
