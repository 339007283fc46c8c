package mixedversion

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// Kinds are the primitives the driver runs: "rwlock" is the write side,
// "rwlock-read" the read side of the same lock (multilock has no keys of
// its own, the countdown latch excludes nothing).
var Kinds = []string{"rlock", "fairlock", "rwlock", "rwlock-read", "semaphore", "redlock"}

// mixable lists, for a pair of different layout versions {old, new}, the
// kinds whose holds still exclude each other when both run on one name.
// Equal layouts exclude for every kind. A layout change adds its row here
// (and a "layout A → B" section to docs/layout.md); a pair with no row
// fails the test, so a bump cannot go unexamined.
var mixable = map[[2]int][]string{
	// Layout 0 (before issue 13) → 1: the lock hash is the raw name in both,
	// so rlock, fairlock, rwlock and redlock still exclude (a fair lock's
	// two queues do not see each other: no FIFO across versions). A
	// semaphore's holders and permits moved to new derived keys, so each
	// version counts only its own permits: it grants twice.
	{0, 1}: {"rlock", "fairlock", "rwlock", "rwlock-read", "redlock"},
}

// Expect reports whether kind's holds must exclude each other between a
// build of layout base and one of layout head, and an error when no
// expectation is written down for the pair.
func Expect(kind string, base, head int) (bool, error) {
	if base == head {
		return true, nil
	}
	kinds, ok := mixable[[2]int{min(base, head), max(base, head)}]
	if !ok {
		return false, fmt.Errorf("mixedversion: layouts %d and %d differ and expect.go has no row for them (what still excludes?)", base, head)
	}
	for _, k := range kinds {
		if k == kind {
			return true, nil
		}
	}
	return false, nil
}

var layoutTitle = regexp.MustCompile(`(?m)^# .*[Ll]ayout version (\d+)`)

// LayoutVersion reads the layout version of the tree at root from its
// docs/layout.md title; 0 when the tree has no such document.
func LayoutVersion(root string) (int, error) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("mixedversion: %w", err)
	}
	m := layoutTitle.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("mixedversion: %s has no title with \"layout version N\"", filepath.Join(root, "docs", "layout.md"))
	}
	return strconv.Atoi(string(m[1]))
}
