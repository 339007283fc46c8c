package mixedversion

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// report is the driver's Report (driver/main.go).
type report struct {
	Label       string `json:"label"`
	Kind        string `json:"kind"`
	Sections    int    `json:"sections"`
	Overlaps    int    `json:"overlaps"`
	Regressions int    `json:"regressions"`
	Timeouts    int    `json:"timeouts"`
	Errors      int    `json:"errors"`
	FirstError  string `json:"first_error"`
}

// runFor is how long both drivers take locks, at once.
const runFor = 4 * time.Second

// TestMixedVersionsExclude runs the previous release's driver and HEAD's
// against one redis-server, every kind on shared names, and checks that
// they exclude each other where their layouts say they must (Expect): no
// critical section ever overlaps another (no reader beside a writer),
// fencing tokens only grow, and both builds got in (so the check is not
// vacuous). About 6 s with a warm build cache, 20 s cold.
func TestMixedVersionsExclude(t *testing.T) {
	root := repoRoot(t)
	base, why := baseRef(t, root)
	if base == "" {
		if inCI() {
			t.Fatal(why + " (CI is set: the mixed-version test must run there)")
		}
		t.Skip(why)
	}
	tmp := t.TempDir()
	baseTree := filepath.Join(tmp, "base")
	export(t, root, base, baseTree)
	// Both builds run HEAD's driver source: only the library differs.
	copyDir(t, filepath.Join(root, "internal", "mixedversion", "driver"), filepath.Join(baseTree, "internal", "mixedversion", "driver"))
	baseBin, headBin := filepath.Join(tmp, "driver-base"), filepath.Join(tmp, "driver-head")
	build(t, baseTree, baseBin, "GOWORK=off")
	build(t, root, headBin)
	baseLayout, err := LayoutVersion(baseTree)
	if err != nil {
		t.Fatal(err)
	}
	headLayout, err := LayoutVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("base %s (layout %d) against HEAD (layout %d)", base, baseLayout, headLayout)

	srv := redistest.Start(t)
	reports := map[string][]report{}
	done := make(chan []report, 2)
	for _, d := range []struct{ label, bin string }{{"base", baseBin}, {"head", headBin}} {
		go func() { done <- runDriver(t, d.bin, d.label, srv.Addr()) }()
	}
	for range 2 {
		for _, r := range <-done {
			reports[r.Kind] = append(reports[r.Kind], r)
		}
	}
	if t.Failed() {
		return
	}
	for _, kind := range Kinds {
		must, err := Expect(kind, baseLayout, headLayout)
		if err != nil {
			t.Fatal(err)
		}
		overlaps, regressions := 0, 0
		for _, r := range reports[kind] {
			t.Logf("%-9s %-4s sections %4d, overlaps %d, token regressions %d, timeouts %d, errors %d %s",
				kind, r.Label, r.Sections, r.Overlaps, r.Regressions, r.Timeouts, r.Errors, r.FirstError)
			overlaps += r.Overlaps
			regressions += r.Regressions
			if must && r.Errors > 0 {
				t.Errorf("%s: the %s build had %d errors, the first: %s", kind, r.Label, r.Errors, r.FirstError)
			}
			if must && r.Sections == 0 {
				t.Errorf("%s: the %s build never got in (%d timeouts): nothing was shown", kind, r.Label, r.Timeouts)
			}
		}
		if len(reports[kind]) != 2 {
			t.Errorf("%s: %d reports, want one per build", kind, len(reports[kind]))
			continue
		}
		switch {
		case must && overlaps > 0:
			t.Errorf("%s: %d critical sections overlapped another between layouts %d and %d: a rolling deploy would grant twice", kind, overlaps, baseLayout, headLayout)
		case must && regressions > 0:
			t.Errorf("%s: %d fencing tokens were not above the one before them", kind, regressions)
		case !must:
			t.Logf("%s: not expected to exclude between layouts %d and %d (docs/layout.md: no mixed deploy); %d overlaps seen", kind, baseLayout, headLayout, overlaps)
		}
	}
	checkLeftovers(t, srv)
}

// firstRelease is the commit the CHANGELOG calls v0.1.0 (layout version 1):
// the base when the clone has no release tag, as CI's clone has none.
const firstRelease = "341aa2637562027c8f229338e4ad1215c3e23d9d"

// baseRef is the commit to test against HEAD: REDISYNC_MIXED_BASE, else the
// newest tag v*, else firstRelease; "" and why not when none is in the
// clone (a shallow clone, a tree exported without .git).
func baseRef(t *testing.T, root string) (string, string) {
	if ref := os.Getenv("REDISYNC_MIXED_BASE"); ref != "" {
		return ref, ""
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "", "mixedversion: git is not on PATH, so no release can be built"
	}
	out, err := exec.Command("git", "-C", root, "tag", "--list", "v*", "--sort=-v:refname").Output()
	if err != nil {
		return "", "mixedversion: not a git clone (git tag failed: " + err.Error() + ")"
	}
	if tags := strings.Fields(string(out)); len(tags) > 0 {
		return tags[0], ""
	}
	if exec.Command("git", "-C", root, "cat-file", "-e", firstRelease+"^{commit}").Run() == nil {
		return firstRelease, ""
	}
	return "", "mixedversion: this clone has neither a release tag v* nor v0.1.0's commit " + firstRelease[:7] +
		" (a shallow clone?), so there is no previous version to mix with (set REDISYNC_MIXED_BASE=<commit>)"
}

// inCI reports whether the test runs in CI (CI set, as .ci/run and most CI
// services set it), where a skipped mixed-version test would hide that a
// rolling upgrade was never checked.
func inCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// export writes the tree of ref into dir (git archive, so the work tree and
// its index are left alone).
func export(t *testing.T, root, ref, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", ref)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var archiveErr, untarErr bytes.Buffer // each written by its own process's copier
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		t.Fatalf("git archive %s: %v: %s", ref, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar: %v: %s", err, untarErr.String())
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// build compiles the driver of the module at dir into bin (without -race:
// the drivers are the subject, not the test's own code).
func build(t *testing.T, dir, bin string, env ...string) {
	t.Helper()
	start := time.Now()
	// -trimpath: the base tree is a new temporary directory each run; with
	// its path left out of the build, the build cache serves the next run
	// (about 1 s instead of 10).
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./internal/mixedversion/driver")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOFLAGS="}, env...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the driver in %s: %v\n%s", dir, err, out)
	}
	t.Logf("built %s in %v", filepath.Base(bin), time.Since(start).Round(time.Millisecond))
}

// runDriver runs one driver to its end and returns its reports (none, and
// the test marked failed, when it fails).
func runDriver(t *testing.T, bin, label, addr string) []report {
	ctx, cancel := context.WithTimeout(context.Background(), runFor+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-addr", addr, "-label", label, "-for", runFor.String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("driver %s: %v\n%s", label, err, stderr.String())
		return nil
	}
	var out []report
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var r report
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Errorf("driver %s: bad report %q: %v", label, sc.Text(), err)
			return nil
		}
		out = append(out, r)
	}
	return out
}

// checkLeftovers: after both drivers released everything, every key left
// in Redis must expire on its own, except a semaphore's configuration hash
// (its capacity, kept by design) and the drivers' own counters, which the
// test removes.
func checkLeftovers(t *testing.T, srv *redistest.Server) {
	t.Helper()
	rc := srv.Client(t)
	ctx := context.Background()
	all, err := rc.Do(ctx, rc.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range all {
		if strings.HasPrefix(k, "mixedversion:") {
			if err := rc.Do(ctx, rc.B().Del().Key(k).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		ttl, err := rc.Do(ctx, rc.B().Pttl().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if ttl == -1 && k != "mixedversion-semaphore" {
			t.Errorf("key %q was left without an expiry", k)
		}
	}
}
