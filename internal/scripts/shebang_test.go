package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oomClass is each script file's deliberate out-of-memory behaviour (see
// shebangWrite in script.go): its first line. A new script must be added
// here, so its author decides.
var oomClass = map[string]string{
	// Writes that may grow the keyspace: refused whole under OOM.
	"fair_acquire.lua":          shebangWrite,
	"fair_redisson_acquire.lua": shebangWrite,
	"latch_try_set_count.lua":   shebangWrite,
	"redlock_acquire.lua":       shebangWrite,
	"redlock_fence.lua":         shebangWrite,
	"rlock_acquire.lua":         shebangWrite,
	"rlock_acquire_all.lua":     shebangWrite,
	"rwlock_read_acquire.lua":   shebangWrite,
	"rwlock_write_acquire.lua":  shebangWrite,
	"sem_acquire.lua":           shebangWrite,
	"holder_record.lua":         shebangWrite, // a record is worth less than the memory
	"sem_state.lua":             shebangWrite, // creates the semaphore's configuration
	"rate_decide.lua":           shebangWrite, // an admission may create the identity's key
	// Reads only.
	"latch_count.lua": shebangRead,
	"lock_read.lua":   shebangRead,
	// Releases, renewals, force unlocks, leaves: no shebang, they run under
	// OOM (refused only at a first growing write before any other write).
	"fair_force_unlock.lua":          "",
	"fair_redisson_force_unlock.lua": "",
	"fair_redisson_leave.lua":        "",
	"fair_redisson_release.lua":      "",
	"fair_release.lua":               "",
	"latch_count_down.lua":           "",
	"latch_delete.lua":               "",
	"queue_leave.lua":                "",
	"redlock_force_unlock.lua":       "",
	"redlock_release.lua":            "",
	"redlock_renew.lua":              "",
	"rlock_force_unlock.lua":         "",
	"rlock_release.lua":              "",
	"rlock_renew.lua":                "",
	"rwlock_force_unlock.lua":        "",
	"rwlock_leave.lua":               "",
	"rwlock_read_release.lua":        "",
	"rwlock_renew.lua":               "",
	"rwlock_write_release.lua":       "",
	"sem_force_release.lua":          "",
	"sem_release.lua":                "",
	"sem_renew.lua":                  "",
	"rate_give_back.lua":             "", // a release: refused only by a growing SET, which keeps the reservation
	"rate_reset.lua":                 "",
}

// libraries are prepended to scripts and must carry no shebang.
func isLibrary(name string) bool {
	return name == "lib.lua" || name == "keyspace.lua" || strings.HasSuffix(name, "_lib.lua")
}

// TestEveryScriptDeclaresItsOOMClass: every script file starts with the
// shebang its class calls for (none for the release class), libraries have
// none, and the assembled source puts it on the first line, where Redis
// reads it.
func TestEveryScriptDeclaresItsOOMClass(t *testing.T) {
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		first, _, _ := strings.Cut(src, "\n")
		if isLibrary(f) {
			if strings.Contains(src, "#!lua") {
				t.Errorf("%s: a library with a shebang", f)
			}
			continue
		}
		want, ok := oomClass[f]
		if !ok {
			t.Errorf("%s: not in oomClass: decide whether it may run out of memory", f)
			continue
		}
		seen++
		got := ""
		if strings.HasPrefix(first, "#!") {
			got = first
		}
		if got != want {
			t.Errorf("%s: first line %q, want %q", f, got, want)
		}
		full := withLib(src)
		if want != "" && !strings.HasPrefix(full, want+"\n") {
			t.Errorf("%s: assembled script does not start with its shebang", f)
		}
		if strings.Count(full, "#!lua") != boolInt(want != "") {
			t.Errorf("%s: assembled script has %d shebangs", f, strings.Count(full, "#!lua"))
		}
	}
	if seen != len(oomClass) {
		t.Errorf("%d scripts in oomClass, %d files", len(oomClass), seen)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
