package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestAcquireFailureNamesTheLockOnce: the library's errors name the lock
// themselves; the command used to put "acquire NAME:" in front, so the name
// appeared twice. A name with a control character stays escaped either way.
func TestAcquireFailureNamesTheLockOnce(t *testing.T) {
	for _, name := range []string{"wj", "bad\x1b[2Kname"} {
		named := fmt.Errorf("rlock %q: waiting for the lock: %w", name, errors.New("EOF"))
		got := acquireFailure(name, named)
		if strings.Count(got, "wj")+strings.Count(got, "name") != 1 {
			t.Errorf("%q: name not exactly once in %q", name, got)
		}
		bare := acquireFailure(name, errors.New("dial tcp: connection refused"))
		if !strings.HasPrefix(bare, "acquire ") || !strings.Contains(bare, "connection refused") {
			t.Errorf("%q: bare error not named: %q", name, bare)
		}
		for _, s := range []string{got, bare} {
			if strings.ContainsRune(s, 0x1b) {
				t.Errorf("raw escape reached the terminal: %q", s)
			}
		}
	}
}
