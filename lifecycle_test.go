package tenure_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/sdk/locks"
)

// killedHolderDir, in the environment, makes TestKilledHolderChild the
// program that embeds tenure and is killed holding a key.
const killedHolderDir = "TENURE_TEST_KILLED_HOLDER_DIR"

// TestKilledHolderChild is the child of TestKilledEmbeddedHolder: it opens
// the store, holds a key in process, says so on stdout and waits to be
// killed. Run on its own it skips.
func TestKilledHolderChild(t *testing.T) {
	dir := os.Getenv(killedHolderDir)
	if dir == "" {
		t.Skip("the child of TestKilledEmbeddedHolder")
	}
	db, err := tenure.Open(dir, tenure.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	lk, err := locks.OpenLock(db, "l")
	if err != nil {
		t.Fatal(err)
	}
	err = lk.Hold(context.Background(), "k", func(ctx context.Context, lease *locks.Lease) error {
		fmt.Printf("held epoch=%d fence=%d\n", db.Epoch(), lease.Fence)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Minute):
			return errors.New("not killed within a minute")
		}
	})
	t.Fatalf("the child was not killed: %v", err)
}

// LOCK-13, LOCK-10, LOCK-02: a program that embeds tenure and holds a key
// is killed with SIGKILL. Its lease ended with its process: the store
// reopened has a new epoch and no lease, and the next fence is larger.
func TestKilledEmbeddedHolder(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestKilledHolderChild$", "-test.count=1")
	child.Env = append(os.Environ(), killedHolderDir+"="+dir)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	var epoch uint64
	var fence int64
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if _, err := fmt.Sscanf(lines.Text(), "held epoch=%d fence=%d", &epoch, &fence); err == nil {
			break
		}
	}
	if fence == 0 {
		t.Fatalf("the child never said it held the key (%v)", lines.Err())
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the child ended with %v, want killed", err)
	}

	db, err := tenure.Open(dir, tenure.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Epoch() != epoch+1 {
		t.Fatalf("epoch %d after the child's %d", db.Epoch(), epoch)
	}
	if err := db.Do(context.Background(), "LOCK.INFO", "l", "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("LOCK.INFO after the holder was killed: %v, want the key free (LOCK-10)", err)
	}
	lk, err := locks.OpenLock(db, "l")
	if err != nil {
		t.Fatal(err)
	}
	err = lk.TryHold(context.Background(), "k", func(_ context.Context, lease *locks.Lease) error {
		if lease.Fence <= fence || uint64(lease.Fence>>32) != db.Epoch() {
			return fmt.Errorf("fence %#x after the killed holder's %#x (LOCK-02)", lease.Fence, fence)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readOnlyFS answers every change to the file system as an unwritable
// directory does (EACCES), and passes reads through. Tests run as root,
// whom a chmod does not stop; this does, whoever runs them.
type readOnlyFS struct{ vfs.FS }

func denied(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: syscall.EACCES} }

func (readOnlyFS) Create(name string, _ vfs.DiskWriteCategory) (vfs.File, error) {
	return nil, denied("open", name)
}
func (readOnlyFS) Link(_, name string) error   { return denied("link", name) }
func (readOnlyFS) Remove(name string) error    { return denied("remove", name) }
func (readOnlyFS) RemoveAll(name string) error { return denied("remove", name) }
func (readOnlyFS) Rename(_, name string) error { return denied("rename", name) }
func (readOnlyFS) OpenReadWrite(name string, _ vfs.DiskWriteCategory, _ ...vfs.OpenOption) (vfs.File, error) {
	return nil, denied("open", name)
}
func (readOnlyFS) ReuseForWrite(_, name string, _ vfs.DiskWriteCategory) (vfs.File, error) {
	return nil, denied("open", name)
}
func (f readOnlyFS) MkdirAll(dir string, _ os.FileMode) error {
	if st, err := f.Stat(dir); err == nil && st.IsDir() {
		return nil
	}
	return denied("mkdir", dir)
}

// snapshot is every file under dir with its size and time of change.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[path] = fmt.Sprintf("%d %v", info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Open on an unwritable data directory answers a clear error and changes
// nothing: no file, no epoch (the next open is the one after the last).
func TestOpenRefusesUnwritable(t *testing.T) {
	dir := t.TempDir()
	db, err := tenure.Open(dir, tenure.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	epoch := db.Epoch()
	if err := db.Do(context.Background(), "SET", "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	_, err = tenure.Open(dir, tenure.Options{Logger: quiet, FS: readOnlyFS{vfs.Default}})
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "open "+dir) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Open on an unwritable directory: %v", err)
	}
	if os.Geteuid() != 0 {
		// Not root: the operating system's own refusal too.
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		_, err := tenure.Open(dir, tenure.Options{Logger: quiet})
		os.Chmod(dir, 0o755)
		if !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("Open on a directory of mode 0555: %v", err)
		}
	}
	after := snapshot(t, dir)
	for path, was := range before {
		if after[path] != was {
			t.Errorf("%s changed: %q, was %q", path, after[path], was)
		}
	}
	for path := range after {
		if _, ok := before[path]; !ok {
			t.Errorf("%s appeared", path)
		}
	}

	db, err = tenure.Open(dir, tenure.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Epoch() != epoch+1 {
		t.Errorf("epoch %d after %d: a refused open took one", db.Epoch(), epoch)
	}
	if v, err := db.Do(context.Background(), "GET", "k").Text(); v != "v" || err != nil {
		t.Errorf("GET k after the refused open: %q %v", v, err)
	}
}
