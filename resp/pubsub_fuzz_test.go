package resp_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// FuzzSubscribedMode runs command sequences on a subscribing connection
// (SPEC §13, §7): each byte of an input picks one step — (un)subscribing
// of every kind, PING, RESET, HELLO 2 and 3, CLIENT REPLY, MULTI/EXEC, a
// command subscribed mode refuses, a PUBLISH from another connection —
// and whether the client reads the replies so far. The server must never
// panic, must leave the connection usable (RESET then PING is answered,
// whatever came before), and once the connection closes must leave no
// goroutine behind (its writer included).
func FuzzSubscribedMode(f *testing.F) {
	panics := &panicLog{}
	s := resptest.Start(f, tenure.Options{Logger: slog.New(panics)})
	for _, seed := range []string{"", "\x00\x01\x02", "\x00\x10\x11\x05", "\x03\x0c\x10\x10\x04\x0e", "\x06\x00\x07\x10\x0f\x09",
		"\x00\x0a\x0b\x10\x0d\x08", "\x01\x13\x10\x12", "\x02\x14\x15\x16\x10"} {
		f.Add([]byte(seed))
	}
	pub, err := net.Dial("tcp", s.Addr)
	if err != nil {
		f.Fatal(err)
	}
	defer pub.Close()
	pubr := bufio.NewReader(pub)
	baseline := -1

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 200 {
			data = data[:200]
		}
		if baseline < 0 {
			baseline = runtime.NumGoroutine()
		}
		nc, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(nc)
		// drain reads what has come so far, without waiting for more.
		drain := func() {
			nc.SetReadDeadline(time.Now().Add(2 * time.Millisecond))
			io.Copy(io.Discard, br)
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		}
		for _, b := range data {
			var cmd string
			switch b % 24 {
			case 0:
				cmd = fmt.Sprintf("SUBSCRIBE c%d c%d", b%3, b%5)
			case 1:
				cmd = fmt.Sprintf("PSUBSCRIBE c* p%d*", b%3)
			case 2:
				cmd = fmt.Sprintf("SSUBSCRIBE s%d", b%3)
			case 3:
				cmd = "UNSUBSCRIBE"
			case 4:
				cmd = fmt.Sprintf("UNSUBSCRIBE c%d", b%3)
			case 5:
				cmd = "PUNSUBSCRIBE"
			case 6:
				cmd = "SUNSUBSCRIBE"
			case 7:
				cmd = "PING"
			case 8:
				cmd = "PING x"
			case 9:
				cmd = "RESET"
			case 10:
				cmd = "HELLO 3"
			case 11:
				cmd = "HELLO 2"
			case 12:
				cmd = "CLIENT REPLY OFF"
			case 13:
				cmd = "CLIENT REPLY ON"
			case 14:
				cmd = "CLIENT REPLY SKIP"
			case 15:
				cmd = "GET k"
			case 16:
				// From another connection, answered there.
				fmt.Fprintf(pub, "PUBLISH c%d m%d\r\nSPUBLISH s%d m\r\n", b%3, b, b%3)
				pubr.ReadString('\n')
				pubr.ReadString('\n')
				continue
			case 17:
				cmd = "MULTI"
			case 18:
				cmd = "EXEC"
			case 19:
				cmd = "PUBLISH c1 self"
			case 20:
				cmd = "PUBSUB NUMSUB c0 c1"
			case 21:
				cmd = "CLIENT LIST"
			case 22:
				cmd = "SUBSCRIBE"
			case 23:
				drain()
				continue
			}
			io.WriteString(nc, cmd+"\r\n")
		}
		// Usable: RESET, then PING, is answered.
		io.WriteString(nc, "RESET\r\nPING\r\n")
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("no PONG after RESET: %v", err)
			}
			if l == "+PONG\r\n" {
				break
			}
		}
		nc.Close()
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > baseline+1 {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				n := runtime.Stack(buf, true)
				t.Fatalf("%d goroutines, %d before: a subscriber's goroutine leaked\n%s", runtime.NumGoroutine(), baseline, buf[:n])
			}
			time.Sleep(time.Millisecond)
		}
		if p := panics.take(); p != "" {
			t.Fatalf("the server panicked on %q:\n%s", data, p)
		}
		if !strings.Contains(s.Addr, ":") {
			t.Fatal("no server")
		}
	})
}
