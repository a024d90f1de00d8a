package resp

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// Users is the users file of SPEC §5: a name, a role and the SHA-256 of a
// password per user. A nil *Users means no users file: every connection
// is admin.
type Users struct {
	byName map[string]account
}

type account struct {
	role Role
	hash [sha256.Size]byte
}

// LoadUsers reads a users file.
func LoadUsers(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	defer f.Close()
	u, err := ParseUsers(f)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return u, nil
}

// maxUsersLine is the longest line a users file may have.
const maxUsersLine = 1 << 20

// ParseUsers reads lines `user NAME ROLE sha256:HEX`; blank lines and `#`
// comments are skipped; any other line is an error naming it.
func ParseUsers(r io.Reader) (*Users, error) {
	u := &Users{byName: map[string]account{}}
	sc := bufio.NewScanner(r)
	// A long comment is still a comment; a line over the cap is refused,
	// by its number like any other bad line.
	sc.Buffer(nil, maxUsersLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "user" {
			return nil, fmt.Errorf("line %d: want `user NAME ROLE sha256:HEX`", n)
		}
		var a account
		switch f[2] {
		case "read":
			a.role = RoleRead
		case "write":
			a.role = RoleWrite
		case "admin":
			a.role = RoleAdmin
		default:
			return nil, fmt.Errorf("line %d: role %q is not read, write or admin", n, f[2])
		}
		h, ok := strings.CutPrefix(f[3], "sha256:")
		if !ok || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
			return nil, fmt.Errorf("line %d: password must be sha256: and 64 lowercase hex digits", n)
		}
		if _, err := hex.Decode(a.hash[:], []byte(h)); err != nil {
			return nil, fmt.Errorf("line %d: password must be sha256: and 64 lowercase hex digits", n)
		}
		if _, dup := u.byName[f[1]]; dup {
			return nil, fmt.Errorf("line %d: user %q is defined twice", n, f[1])
		}
		u.byName[f[1]] = a
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return u, nil
}

// check says whether password is user's, comparing hashes in constant
// time, and returns the user's role. Without a users file the default user
// takes any password, as Redis's nopass default user does.
func (u *Users) check(user string, password []byte) (Role, bool) {
	if u == nil {
		return RoleAdmin, user == "default"
	}
	a, found := u.byName[user]
	sum := sha256.Sum256(password)
	// Compare even for an unknown user, so timing does not tell names.
	ok := subtle.ConstantTimeCompare(sum[:], a.hash[:]) == 1
	return a.role, found && ok
}
