package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Event is one line of a run's history. Times are nanoseconds of
// CLOCK_MONOTONIC, the one clock every process of the machine shares, so
// that the events of the harness, its child clients and its proxy can be
// compared.
type Event struct {
	Kind   string `json:"kind"`             // see the kinds below
	Client string `json:"client,omitempty"` // g3, p1.0, proxy, nemesis
	Hold   int64  `json:"hold,omitempty"`   // the client's hold number: ties a hold's events
	Key    string `json:"key,omitempty"`
	// Mode is how a hold's events held Key (modeMutex, modeShared, …):
	// what the checker allows of holds of one key at once.
	Mode  string `json:"mode,omitempty"`
	Fence int64  `json:"fence,omitempty"`
	Start int64  `json:"start,omitempty"`
	End   int64  `json:"end,omitempty"`
	// Deadline is the holder's deadline (SPEC §8) when the event was
	// recorded.
	Deadline int64  `json:"deadline,omitempty"`
	Value    string `json:"value,omitempty"`  // read or written
	Result   string `json:"result,omitempty"` // ok, nil, FENCED, LOST, err: …
	Late     bool   `json:"late,omitempty"`   // a write sent after its holder's deadline
	ReqID    string `json:"reqid,omitempty"`
	LeaseID  string `json:"lease,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// A raw command's: its arguments, and its reply (Result says how it
	// was answered: ok, nil, error, unknown).
	Args  []string `json:"args,omitempty"`
	Reply string   `json:"reply,omitempty"`
	// Target counts the servers the proxy passed connections to: the
	// one a command reached, the one a restart started.
	Target int64 `json:"target,omitempty"`
}

// The kinds of event.
const (
	// A client's.
	evHold  = "hold"  // fn started: Start is then, Deadline the holder's
	evRead  = "read"  // GET of the key's counter
	evWrite = "write" // SET of the counter with FENCE
	evEnd   = "end"   // fn ended: End is then, Deadline the holder's last
	evHeld  = "held"  // Hold returned: Result says how
	// The proxy's: a LOCK.HOLD reply that granted, whether or not the
	// client got it; Value is the HOLD's OWNER.
	evGrant = "grant"
	// The proxy's: a command on the wire (a LOCK.* command, a counter's
	// GET or SET) that reached server Target: Start just before the read
	// that brought its last byte was passed on, End just after the read
	// that brought its reply's last byte (whether or not the client got
	// it), Result and Reply; Result "unknown" and no End if the
	// connection closed first.
	evWire = "wire"
	// The nemesis's and the harness's.
	evFault   = "fault"   // Detail: kill, freeze, cut, swallow, burst
	evRestart = "restart" // the server listens, and the proxy passes connections to it from Start; Detail: its epoch
	evFinal   = "final"   // the counter read after the run: Value, Result
	evCounter = "counter" // the server's INFO locks at the end: Detail
	evConfig  = "config"  // how the run was set up: Detail
)

// mono reads CLOCK_MONOTONIC.
func mono() int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// monoOf is t, a time.Time with a monotonic reading, on CLOCK_MONOTONIC.
func monoOf(t time.Time) int64 { return mono() + int64(time.Until(t)) }

// History collects events from every goroutine of the harness.
type History struct {
	mu     sync.Mutex
	events []Event
}

func (h *History) Add(e Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// Events returns the events in the order of their first time.
func (h *History) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.events)
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(first(a), first(b)) })
	return out
}

func first(e Event) int64 {
	if e.Start != 0 {
		return e.Start
	}
	return e.End
}

// checkFile checks a history written by WriteTo. The server's counters
// come from its counter event.
func checkFile(path string, linBudget time.Duration) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []Event
	info := map[string]string{}
	dec := json.NewDecoder(f)
	for {
		var e Event
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if e.Kind == evCounter {
			for _, kv := range strings.Fields(e.Detail) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					info[k] = v
				}
			}
		}
		events = append(events, e)
	}
	r := check(events, info, linBudget)
	r.Faults = map[string]int{}
	for _, e := range events {
		switch e.Kind {
		case evFault:
			kind, _, _ := strings.Cut(e.Detail, ":")
			r.Faults[kind]++
		case evRestart:
			r.Restarts++
		}
	}
	r.Restarts = max(r.Restarts-1, 0) // the first start is no restart
	r.Visuals = r.writeVisualizations(path)
	if len(events) > 0 {
		r.Elapsed = time.Duration(first(events[len(events)-1]) - first(events[0]))
	}
	return r, nil
}

// WriteTo writes the events as JSON lines.
func (h *History) WriteTo(w io.Writer) (int64, error) {
	enc := json.NewEncoder(w)
	for _, e := range h.Events() {
		if err := enc.Encode(e); err != nil {
			return 0, err
		}
	}
	return 0, nil
}
