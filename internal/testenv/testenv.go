// Package testenv answers what tests ask about the binary they run in
// (was it built with -race?), and holds what tests of several packages share
// (LogBuffer). It is for tests only, and is not where test
// servers are started: that is resptest.
package testenv

import "runtime/debug"

// RaceEnabled says whether the running binary was built with -race: tests
// that start a server process build it the same way, and load tests size
// themselves down under the race detector's cost.
func RaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
