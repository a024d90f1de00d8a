package resp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzUsersFile feeds arbitrary files to ParseUsers (SPEC §5). It must never
// panic. A file it accepts round-trips: every user it parsed has the role
// read, write or admin, and written back as `user NAME ROLE sha256:HEX`
// lines the users parse to the same accounts. A file it refuses is refused
// with an error that names a line of the file.
func FuzzUsersFile(f *testing.F) {
	hash := strings.Repeat("ab", 32)
	for _, s := range []string{
		"",
		"\n\n# only comments\n   # indented\n",
		"user alice admin sha256:" + hash + "\n",
		"user alice admin sha256:" + hash + "\nuser bob read sha256:" + hash + "\r\nuser carol write sha256:" + hash,
		"  user\talice\t admin   sha256:" + hash + "  \n",
		"user alice admin sha256:" + strings.ToUpper(hash) + "\n",
		"user alice admin sha256:" + hash[:63] + "\n",
		"user alice admin sha256:" + hash + "0\n",
		"user alice admin sha512:" + hash + "\n",
		"user alice admin " + hash + "\n",
		"user alice root sha256:" + hash + "\n",
		"user alice Admin sha256:" + hash + "\n",
		"USER alice admin sha256:" + hash + "\n",
		"user alice admin sha256:" + hash + " extra\n",
		"user alice admin\n",
		"user alice admin sha256:" + hash + "\nuser alice read sha256:" + hash + "\n",
		"# comment\n\nuser a read sha256:" + hash + "\ngarbage\n",
		"user \xff\xfe read sha256:" + hash + "\n",
		"user a\x00b read sha256:" + hash + "\n",
		"user a\u00a0b read sha256:" + hash + "\n",
		"user #a read sha256:" + hash + "\n",
		"\r\r\nuser a read sha256:" + hash + "\r",
		"user a read sha256:" + strings.Repeat("g", 64) + "\n",
		"user a read sha256:" + hash + "\n" + strings.Repeat("x", 70000) + "\n",
		strings.Repeat("#", 70000) + "\nuser a read sha256:" + hash,
	} {
		f.Add([]byte(s))
	}
	lineRef := regexp.MustCompile(`^line (\d+): `)
	f.Fuzz(func(t *testing.T, file []byte) {
		u, err := ParseUsers(bytes.NewReader(file))
		if err != nil {
			m := lineRef.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error %q does not start by naming a line", err)
			}
			n, _ := strconv.Atoi(m[1])
			if lines := bytes.Count(file, []byte("\n")) + 1; n < 1 || n > lines {
				t.Fatalf("error %q names line %d of a file of %d lines", err, n, lines)
			}
			return
		}
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(u.byName)) {
			a := u.byName[name]
			switch a.role {
			case RoleRead, RoleWrite, RoleAdmin:
			default:
				t.Fatalf("user %q parsed with role %v", name, a.role)
			}
			line := fmt.Sprintf("user %s %s sha256:%s", name, a.role, hex.EncodeToString(a.hash[:]))
			if !bytes.Contains(file, []byte(hex.EncodeToString(a.hash[:]))) {
				t.Fatalf("user %q has a hash that is not in the file", name)
			}
			b.WriteString(line + "\n")
		}
		again, err := ParseUsers(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("the accepted users, written back, are refused: %v\n%s", err, b.String())
		}
		if !maps.Equal(u.byName, again.byName) {
			t.Fatalf("the accepted users, written back, parse to other accounts:\n%s", b.String())
		}
	})
}

// A users file line over the scanner's 64 KB default stopped the server
// with "bufio.Scanner: token too long", naming no line (SPEC §5: any other
// line stops the server with an error naming the line). Found by
// FuzzUsersFile. A long comment is a comment; a line over 1 MB is named.
func TestUsersFileLongLines(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	u, err := ParseUsers(strings.NewReader("#" + strings.Repeat("x", 100<<10) + "\nuser a read sha256:" + hash + "\n"))
	if err != nil || len(u.byName) != 1 {
		t.Fatalf("a 100 KB comment: %v", err)
	}
	_, err = ParseUsers(strings.NewReader("user a read sha256:" + hash + "\n#" + strings.Repeat("x", 2<<20) + "\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 2: ") {
		t.Fatalf("a 2 MB line: got %v, want an error naming line 2", err)
	}
}
