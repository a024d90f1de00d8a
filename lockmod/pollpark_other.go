//go:build !unix

package lockmod

// parkForPoll has no pipe to park on here: the pacer sleeps instead.
func parkForPoll() bool { return false }
