package main

// (d) for the Redis recipe's keys: their raw command history, as the
// proxy saw it pass (SET … NX PX, and the compare-and-pexpire and
// compare-and-delete scripts by EVALSHA or EVAL), against recipeModel, one
// partition per key over the whole run. The server runs with --fsync
// always, and a key's PX is a deadline on the store's wall clock, which a
// restart does not move: the key outlives a SIGKILL exactly as it would
// have lived, so the register lives across restarts, as the counters' do.
// Each script is one step of the model (LOCK-18: atomic).

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// recipeCmd is a command on a recipe key.
type recipeCmd uint8

const (
	recipeSet     recipeCmd = iota // SET key token NX PX ttl
	recipeExtendC                  // the compare-and-pexpire script
	recipeDelete                   // the compare-and-delete script
)

// recipeInput is one command on one recipe key.
type recipeInput struct {
	Cmd   recipeCmd
	Key   string
	Token string
	TTL   int64 // ns: SET's PX, the extension's
	// Call is when the command was sent; Return when its reply came, or
	// math.MaxInt64 for an unknown outcome.
	Call, Return int64
}

// recipeOutput is its reply: SET OK (OK) or nil (!OK); a script's 1 (OK)
// or 0 (!OK). Unknown: no reply, or an error that does not say the store
// did nothing.
type recipeOutput struct {
	OK, Unknown bool
}

// recipeState is a recipe key: absent, or held by token until a deadline
// in [dlo, dhi] (which may have passed).
type recipeState struct {
	held     bool
	token    string
	dlo, dhi int64
	// since: no command after this state was processed before it.
	since int64
}

// recipeSlack is how far the store's deadlines and the history's clock
// may disagree: the store keeps a key's deadline in whole milliseconds.
const recipeSlack = int64(2 * time.Millisecond)

// recipeModel is the sequential specification of a key of the recipe: SET
// NX succeeds exactly when the key is absent or past its deadline, and
// then holds it for PX from the moment it ran; the scripts extend or
// delete it exactly when it is live and holds the caller's token.
//
// A command of unknown outcome may have been done or not: the model steps
// to both (porcupine's power-set construction of a nondeterministic
// model), since its Return may be bounded (recipeHistory), and placed
// last is then no longer "not done".
var recipeModel = (&porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(recipeInput).Key
			if byKey[k] == nil {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{recipeState{}} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(recipeState), input.(recipeInput), output.(recipeOutput)
		ok, next := recipeStep(st, in, out)
		switch {
		case out.Unknown && next != any(st):
			return []any{st, next}
		case ok:
			return []any{next}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, ok1 := input.(recipeInput)
		out, ok2 := output.(recipeOutput)
		if !ok1 || !ok2 {
			return "?"
		}
		name := map[recipeCmd]string{recipeSet: "set nx", recipeExtendC: "extend", recipeDelete: "delete"}[in.Cmd]
		res := map[bool]string{true: "1", false: "0"}[out.OK]
		if out.Unknown {
			res = "?"
		}
		return fmt.Sprintf("%s(%s) -> %s", name, short(in.Token), res)
	},
	DescribeState: func(state any) string {
		st := state.(recipeState)
		if !st.held {
			return "absent"
		}
		return fmt.Sprintf("%s until [%s, %s]", short(st.token), secs(st.dlo), secs(st.dhi))
	},
}).ToModel()

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

func recipeStep(st recipeState, in recipeInput, out recipeOutput) (bool, any) {
	now := max(st.since, in.Call)
	// The key can have been live when the command ran, or gone by then.
	live := st.held && now < satAdd(st.dhi, recipeSlack)
	gone := !st.held || satAdd(in.Return, recipeSlack) >= st.dlo
	mine := st.held && st.token == in.Token
	hold := func() recipeState {
		return recipeState{held: true, token: in.Token, dlo: now + in.TTL, dhi: satAdd(in.Return, in.TTL), since: now}
	}
	switch in.Cmd {
	case recipeSet:
		switch {
		case out.Unknown:
			// Done, if it was done, only on a key that was gone (the
			// model's Step adds: or not done).
			if gone {
				if st.held {
					now = max(now, st.dlo)
				}
				return true, hold()
			}
			return true, st
		case out.OK:
			if !gone {
				return false, st
			}
			if st.held {
				now = max(now, st.dlo) // it ran once the key had run out
			}
			return true, hold()
		}
		return live, st // nil: someone held it
	case recipeExtendC:
		switch {
		case out.Unknown:
			if mine && live {
				return true, recipeState{held: true, token: st.token, dlo: now + in.TTL, dhi: satAdd(in.Return, in.TTL), since: now}
			}
			return true, st
		case out.OK:
			if !mine || !live {
				return false, st
			}
			return true, recipeState{held: true, token: st.token, dlo: now + in.TTL, dhi: satAdd(in.Return, in.TTL), since: now}
		}
		// 0: another token, or the caller's had run out.
		if mine && !gone {
			return false, st
		}
		if mine {
			return true, recipeState{since: max(now, st.dlo)}
		}
		return true, st
	case recipeDelete:
		switch {
		case out.Unknown:
			if mine && live {
				return true, recipeState{since: now}
			}
			return true, st
		case out.OK:
			if !mine || !live {
				return false, st
			}
			return true, recipeState{since: now}
		}
		if mine && !gone {
			return false, st
		}
		if mine {
			return true, recipeState{since: max(now, st.dlo)}
		}
		return true, st
	}
	return false, st
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// The recipe's scripts by their SHA1, as EVALSHA names them.
var recipeScripts = map[string]recipeCmd{
	sha1hex(recipeExtend):  recipeExtendC,
	sha1hex(recipeRelease): recipeDelete,
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// recipeCommand says whether args is a command of the recipe on one of its
// keys (what the proxy records of it).
func recipeCommand(args []string) bool {
	switch strings.ToLower(args[0]) {
	case "set":
		return strings.HasPrefix(args[1], recipeKey(""))
	case "evalsha", "eval":
		return len(args) >= 4 && args[2] == "1" && strings.HasPrefix(args[3], recipeKey(""))
	}
	return false
}

// recipeHistory is the recipe keys' commands of a history as operations of
// recipeModel, and how many were left out: those answered with an error
// that says the store did nothing (NOSCRIPT, a follower's redirection). A
// command of unknown outcome was processed, if at all, before its server
// was killed (serverRuns): its Return is that bound, or none. (In a
// cluster there is none: a leader's entry that no reply acknowledged may
// be committed by the next leader, whenever it is elected; the run's
// check leaves the recipe's keys to (a) there.)
func recipeHistory(events []Event) ([]porcupine.Operation, int) {
	runs := serverRuns(events)
	var ops []porcupine.Operation
	dropped := 0
	for _, e := range events {
		if e.Kind != evWire || len(e.Args) < 2 || !recipeCommand(e.Args) {
			continue
		}
		in := recipeInput{Call: e.Start, Return: e.End}
		switch strings.ToLower(e.Args[0]) {
		case "set": // SET key token NX PX ms
			if len(e.Args) != 6 {
				dropped++
				continue
			}
			ms, err := strconv.ParseInt(e.Args[5], 10, 64)
			if err != nil {
				dropped++
				continue
			}
			in.Cmd, in.Key, in.Token, in.TTL = recipeSet, e.Args[1], e.Args[2], ms*int64(time.Millisecond)
		default: // EVALSHA sha 1 key token [ms], or EVAL body 1 key token [ms]
			sha := e.Args[1]
			if strings.EqualFold(e.Args[0], "eval") {
				sha = sha1hex(e.Args[1])
			}
			cmd, ok := recipeScripts[sha]
			if !ok || len(e.Args) < 5 {
				dropped++
				continue
			}
			in.Cmd, in.Key, in.Token = cmd, e.Args[3], e.Args[4]
			if cmd == recipeExtendC {
				ms, err := strconv.ParseInt(e.Args[len(e.Args)-1], 10, 64)
				if err != nil || len(e.Args) != 6 {
					dropped++
					continue
				}
				in.TTL = ms * int64(time.Millisecond)
			}
		}
		var out recipeOutput
		switch {
		case e.Result == "ok" && in.Cmd == recipeSet:
			out.OK = true
		case e.Result == "nil" && in.Cmd == recipeSet:
		case e.Result == "ok" && (e.Reply == "1" || e.Reply == "0"):
			out.OK = e.Reply == "1"
		case e.Result == "error" && (strings.HasPrefix(e.Reply, "NOSCRIPT") || strings.HasPrefix(e.Reply, "MOVED ") || strings.HasPrefix(e.Reply, "CLUSTERDOWN")):
			dropped++ // the store did nothing
			continue
		default:
			// No reply, or an error that says nothing of what was done.
			out.Unknown = true
			in.Return = math.MaxInt64
			if run, ok := runs[e.Target]; ok {
				if run.killed < in.Call {
					dropped++ // it reached a server already killed
					continue
				}
				in.Return = run.killed
			}
		}
		ops = append(ops, porcupine.Operation{Input: in, Call: in.Call, Output: out, Return: in.Return, Metadata: fmt.Sprintf("server %d", e.Target)})
	}
	return ops, dropped
}
