package linmodel

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// RegisterInput is a GET or a SET of one string key.
type RegisterInput struct {
	Key   string
	Set   bool
	Value string // SET's
	Fence int64  // SET's FENCE; 0 for a plain SET
}

// RegisterOutput is its reply: GET OK (Value) or Null; SET OK, Refused
// (-FENCED) or Unknown.
type RegisterOutput struct {
	Outcome Outcome
	Value   string
}

// RegisterOp makes a porcupine operation of a GET or SET sent at call and
// answered at ret. For an unknown outcome ret is the latest time it can
// have taken effect: math.MaxInt64, or earlier if the caller knows better
// (a SET … FENCE f changes nothing once a larger fence has been written).
func RegisterOp(client int, call, ret int64, in RegisterInput, out RegisterOutput) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

// registerState is a key: missing, or its value and the largest fence that
// wrote it.
type registerState struct {
	present bool
	value   string
	fence   int64
}

// FencedRegister is the sequential specification of a string key written
// with SET … FENCE (LOCK-12): a GET sees the last value written; a SET with
// a fence smaller than the one the key remembers writes nothing and is
// refused, any other writes and remembers the larger fence. With --fsync
// always an acknowledged SET survives a crash, so one key's history may span
// restarts of the store.
var FencedRegister = porcupine.Model{
	Partition: partitionBy(func(in any) string { return in.(RegisterInput).Key }),
	Init:      func() any { return registerState{} },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(registerState), input.(RegisterInput), output.(RegisterOutput)
		if !in.Set {
			switch out.Outcome {
			case OK:
				return st.present && st.value == out.Value, st
			case Null:
				return !st.present, st
			case Unknown:
				return true, st
			}
			return false, st
		}
		fenced := in.Fence != 0 && st.fence > in.Fence
		written := registerState{present: true, value: in.Value, fence: max(st.fence, in.Fence)}
		switch out.Outcome {
		case OK:
			return !fenced, written
		case Refused:
			return fenced, st
		case Unknown:
			if fenced {
				return true, st
			}
			return true, written
		}
		return false, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(RegisterInput), output.(RegisterOutput)
		if !in.Set {
			switch out.Outcome {
			case OK:
				return fmt.Sprintf("get -> %q", out.Value)
			case Null:
				return "get -> nil"
			}
			return "get -> ?"
		}
		switch out.Outcome {
		case OK:
			return fmt.Sprintf("set(%q, fence %d) -> OK", in.Value, in.Fence)
		case Refused:
			return fmt.Sprintf("set(%q, fence %d) -> FENCED", in.Value, in.Fence)
		}
		return fmt.Sprintf("set(%q, fence %d) -> ?", in.Value, in.Fence)
	},
	DescribeState: func(state any) string {
		st := state.(registerState)
		if !st.present {
			return "missing"
		}
		return fmt.Sprintf("%q (fence %d)", st.value, st.fence)
	},
}
