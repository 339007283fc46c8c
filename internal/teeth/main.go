package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func main() {
	list := flag.Bool("list", false, "list the selected mutants (name, package, test) and run nothing")
	share := flag.String("share", "", "run share k/n: the mutants whose index, sorted by name, is k mod n (with -rotate: n alone)")
	rotate := flag.Bool("rotate", false, "take k of -share from the current commit (git rev-parse HEAD), so that n commits run every mutant")
	baseline := flag.Bool("baseline", false, "run each mutant's test on the unmutated tree first; it must pass")
	timeout := flag.Duration("timeout", 5*time.Minute, "go test -timeout of each run")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./internal/teeth [flags] [mutant names...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(os.Stdout, *list, *share, *rotate, *baseline, *timeout, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "teeth:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, list bool, share string, rotate, baseline bool, timeout time.Duration, names []string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	all, err := load(filepath.Join(root, "internal", "teeth", "mutants"))
	if err != nil {
		return err
	}
	ms, err := selectMutants(all, names)
	if err != nil {
		return err
	}
	if share != "" {
		k, n, err := parseShare(share, rotate, root)
		if err != nil {
			return err
		}
		ms = shareOf(ms, k, n)
		fmt.Fprintf(w, "share %d/%d: %d of %d mutants\n", k, n, len(ms), len(all))
	} else if rotate {
		return errors.New("-rotate needs -share n")
	}
	if list {
		for _, m := range ms {
			fmt.Fprintf(w, "%s\t%s\t%s\n", m.name, m.pkg, m.test)
		}
		return nil
	}
	tmp, err := os.MkdirTemp("", "teeth")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	failed := 0
	start := time.Now()
	for _, m := range ms {
		t0 := time.Now()
		verdict, detail := check(root, tmp, m, baseline, timeout)
		fmt.Fprintf(w, "%-12s %s (%s)\n", verdict, m.name, time.Since(t0).Round(100*time.Millisecond))
		if verdict != caught {
			failed++
			if detail != "" {
				fmt.Fprintln(w, indent(detail))
			}
		}
	}
	fmt.Fprintf(w, "%d of %d mutants caught in %s\n", len(ms)-failed, len(ms), time.Since(start).Round(time.Second))
	if failed > 0 {
		return fmt.Errorf("%d of %d not caught", failed, len(ms))
	}
	return nil
}

// The verdicts. Only caught is a success: the test failed with the mutant
// in, and the package built.
const (
	caught      = "caught"
	notCaught   = "NOT CAUGHT"
	stale       = "stale"
	buildBroken = "build-broken"
	noTest      = "no-test"     // the test pattern matched no test
	failsClean  = "fails-clean" // -baseline: the test fails without the mutant
)

// check runs one mutant and returns its verdict, with the output or error
// that explains any verdict but caught.
func check(root, tmp string, m *mutant, baseline bool, timeout time.Duration) (string, string) {
	files, err := m.apply(root)
	if err != nil {
		return stale, err.Error()
	}
	if baseline {
		out, err := goTest(root, "", m, timeout)
		if v := classify(out, err); v != notCaught {
			if v == caught {
				v = failsClean
			}
			return v, tail(out)
		}
	}
	overlay, err := writeOverlay(root, tmp, m.name, files)
	if err != nil {
		return buildBroken, err.Error()
	}
	out, err := goTest(root, overlay, m, timeout)
	v := classify(out, err)
	if v == caught {
		return v, ""
	}
	return v, tail(out)
}

// writeOverlay writes the mutated files under tmp and the go build
// -overlay file that puts them in place of the originals (.go files and
// //go:embed'ed files alike).
func writeOverlay(root, tmp, name string, files map[string]string) (string, error) {
	dir := filepath.Join(tmp, name)
	replace := map[string]string{}
	for p, content := range files {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(root, filepath.FromSlash(p))] = dst
	}
	data, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(dir, "overlay.json")
	return overlay, os.WriteFile(overlay, data, 0o644)
}

// goTest runs the mutant's test, with the overlay if one is given.
func goTest(root, overlay string, m *mutant, timeout time.Duration) (string, error) {
	args := []string{"test", "-count=1", "-timeout", timeout.String(), "-run", m.test}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	// The flags after the package: go test reads its own there, and passes
	// the test binary's (e.g. -rapid.seed=1) on.
	args = append(args, m.pkg)
	args = append(args, m.flags...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

var (
	buildFailed = regexp.MustCompile(`\[(build|setup) failed\]`)
	ranNothing  = regexp.MustCompile(`(?m)^testing: warning: no tests to run|\[no tests to run\]|\[no test files\]`)
)

// classify reads a go test run: a failure that is not the build's is the
// test catching the mutant.
func classify(out string, err error) string {
	var exit *exec.ExitError
	switch {
	case err == nil && ranNothing.MatchString(out):
		return noTest
	case err == nil:
		return notCaught
	case !errors.As(err, &exit):
		return buildBroken // go did not run (or was killed)
	case buildFailed.MatchString(out):
		return buildBroken
	}
	return caught
}

// parseShare reads -share: "k/n", or "n" with rotate, k then the first
// eight hex digits of HEAD mod n.
func parseShare(s string, rotate bool, root string) (k, n int, err error) {
	ks, ns, hasK := strings.Cut(s, "/")
	if !hasK {
		ks, ns = "", ks
	}
	n, err = strconv.Atoi(ns)
	if err != nil || n < 1 {
		return 0, 0, fmt.Errorf("-share %q: n must be a positive integer", s)
	}
	switch {
	case rotate && hasK:
		return 0, 0, fmt.Errorf("-share %q: with -rotate give n alone (the commit picks k)", s)
	case rotate:
		out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
		if err != nil {
			return 0, 0, fmt.Errorf("-rotate: git rev-parse HEAD: %w", err)
		}
		h, err := strconv.ParseUint(strings.TrimSpace(string(out))[:8], 16, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("-rotate: %w", err)
		}
		return int(h % uint64(n)), n, nil
	case !hasK:
		return 0, 0, fmt.Errorf("-share %q: want k/n (or n with -rotate)", s)
	}
	k, err = strconv.Atoi(ks)
	if err != nil || k < 0 || k >= n {
		return 0, 0, fmt.Errorf("-share %q: k must be in [0, n)", s)
	}
	return k, n, nil
}

// shareOf keeps the mutants whose index in ms is k mod n.
func shareOf(ms []*mutant, k, n int) []*mutant {
	var out []*mutant
	for i, m := range ms {
		if i%n == k {
			out = append(out, m)
		}
	}
	return out
}

// selectMutants keeps the named mutants (all when names is empty).
func selectMutants(all []*mutant, names []string) ([]*mutant, error) {
	if len(names) == 0 {
		return all, nil
	}
	byName := map[string]*mutant{}
	for _, m := range all {
		byName[m.name] = m
	}
	var ms []*mutant
	for _, name := range names {
		m, ok := byName[strings.TrimSuffix(filepath.Base(name), ".mutant")]
		if !ok {
			return nil, fmt.Errorf("no mutant %q (see -list)", name)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module: run from the repository")
	}
	return filepath.Dir(gomod), nil
}

// tail is the end of a run's output, enough to see why.
func tail(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > 30 {
		lines = append([]string{"..."}, lines[len(lines)-30:]...)
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
