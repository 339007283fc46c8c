// Command testprogress runs `go test -json` and prints one line per package
// as it finishes, the output of every failing test, a line naming the
// packages still running when nothing has finished for a while, and at the
// end the slowest tests and the total time. It is what `make test` uses, so
// that a long run is never silent and a failure shows without scrolling
// through passing output (plain `go test` over many packages prints them in
// list order, so one slow package early in the list holds back the lines of
// every package after it; `go test -json` streams).
//
// Usage:
//
//	go run ./internal/testprogress [-slow N] [-quiet D] -- GO-TEST-ARGS [:: GO-TEST-ARGS ...]
//
// Each group of arguments (groups are separated by "::") is one
// `go test -json GO-TEST-ARGS` invocation; the groups run at the same time
// (e.g. `-C redisyncotel ./...` for the second module). The exit status is
// non-zero when an invocation failed or any test or package failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// event is one line of `go test -json` (cmd/test2json), build events
// included.
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Elapsed    float64
	Output     string
}

// result is one finished test, for the slowest-tests table.
type result struct {
	pkg, test string
	elapsed   float64
}

// progress is the printer's state; events from every invocation go through
// one mutex, so lines never interleave.
type progress struct {
	mu       sync.Mutex
	out      io.Writer
	start    time.Time
	last     time.Time                      // when a package last finished
	running  map[string]time.Time           // package -> start
	output   map[string]map[string][]string // package -> test ("" for the package) -> lines
	tests    []result
	longest  map[key]float64 // package and top-level test -> longest run of it or a subtest
	passed   []string
	failed   []string
	failures int // failed tests
}

func main() {
	slow := flag.Int("slow", 10, "print the `N` slowest tests at the end")
	quiet := flag.Duration("quiet", 30*time.Second, "name the running packages after this long without one finishing")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testprogress [-slow N] [-quiet D] -- GO-TEST-ARGS [:: GO-TEST-ARGS ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	groups := split(flag.Args())
	if len(groups) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	p := &progress{out: os.Stdout, start: time.Now(), running: map[string]time.Time{},
		output: map[string]map[string][]string{}}
	p.last = p.start

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the heartbeat, awaited below
		defer wg.Done()
		p.heartbeat(*quiet, stop)
	}()

	errs := make([]error, len(groups))
	var runs sync.WaitGroup
	for i, args := range groups {
		runs.Add(1)
		go func() {
			defer runs.Done()
			errs[i] = p.run(args)
		}()
	}
	runs.Wait()
	close(stop)
	wg.Wait()

	code := p.summary(*slow)
	for i, err := range errs {
		// A failed test or package already made the status non-zero and
		// was printed; an invocation that failed otherwise (a bad flag, a
		// build error outside any package) is reported here.
		if err != nil && code == 0 {
			fmt.Fprintf(os.Stderr, "testprogress: go test %s: %v\n", strings.Join(groups[i], " "), err)
			code = 1
		}
	}
	os.Exit(code)
}

// split cuts args at "::".
func split(args []string) [][]string {
	var groups [][]string
	cur := []string{}
	for _, a := range args {
		if a == "::" {
			if len(cur) > 0 {
				groups = append(groups, cur)
			}
			cur = []string{}
			continue
		}
		cur = append(cur, a)
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return groups
}

// run runs one `go test -json` and feeds its events to the printer. A -C
// flag must come first on go's command line, so it is moved before -json.
func (p *progress) run(args []string) error {
	goArgs := []string{"test"}
	if len(args) >= 2 && args[0] == "-C" {
		goArgs = append(goArgs, args[:2]...)
		args = args[2:]
	}
	goArgs = append(append(goArgs, "-json"), args...)
	cmd := exec.Command("go", goArgs...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			p.raw(string(line)) // not an event: pass it on as is
			continue
		}
		p.event(ev)
	}
	scanErr := sc.Err()
	if err := cmd.Wait(); err != nil {
		return err
	}
	return scanErr
}

func (p *progress) raw(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.out, line)
}

func (p *progress) event(ev event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Action {
	case "build-output":
		fmt.Fprint(p.out, ev.Output)
		return
	case "build-fail":
		// The package's own fail event follows (its build output is
		// printed above): that one counts.
		return
	case "start":
		p.running[ev.Package] = time.Now()
		return
	case "output":
		p.keep(ev.Package, ev.Test, ev.Output)
		return
	case "pass", "fail", "skip":
	default: // run, pause, cont, bench
		return
	}
	if ev.Test != "" {
		p.testDone(ev)
		return
	}
	delete(p.running, ev.Package)
	p.last = time.Now()
	pkg := short(ev.Package)
	switch ev.Action {
	case "pass":
		p.passed = append(p.passed, pkg)
		fmt.Fprintf(p.out, "%s ok    %-32s %6.1fs\n", p.clock(), pkg, ev.Elapsed)
	case "skip": // no test files: not worth a line
	case "fail":
		p.failed = append(p.failed, pkg)
		// What the package printed outside any test (a panic, a goleak
		// report from TestMain, a build error) explains the failure.
		for _, l := range p.output[ev.Package][""] {
			fmt.Fprint(p.out, "    "+l)
		}
		fmt.Fprintf(p.out, "%s FAIL  %-32s %6.1fs\n", p.clock(), pkg, ev.Elapsed)
	}
	delete(p.output, ev.Package)
}

// keep stores a line of output until its test (or package) ends.
func (p *progress) keep(pkg, test, line string) {
	m := p.output[pkg]
	if m == nil {
		m = map[string][]string{}
		p.output[pkg] = m
	}
	m[test] = append(m[test], line)
}

func (p *progress) testDone(ev event) {
	lines := p.output[ev.Package][ev.Test]
	delete(p.output[ev.Package], ev.Test)
	if ev.Action == "fail" {
		p.failures++
		// Each test's own lines only: a subtest's output events carry the
		// subtest's name, so they were printed with the subtest.
		fmt.Fprintf(p.out, "--- FAIL: %s (%s) %.2fs\n", ev.Test, short(ev.Package), ev.Elapsed)
		for _, l := range lines {
			fmt.Fprint(p.out, "    "+l)
		}
	}
	// A test whose subtests run in parallel reports only the time of its
	// own function, which returns before they start: it is charged its
	// longest subtest, so the table shows where the time went.
	top, _, _ := strings.Cut(ev.Test, "/")
	k := key{ev.Package, top}
	if p.longest == nil {
		p.longest = map[key]float64{}
	}
	p.longest[k] = max(p.longest[k], ev.Elapsed)
	if top == ev.Test {
		p.tests = append(p.tests, result{short(ev.Package), ev.Test, p.longest[k]})
	}
}

// key names a test of a package.
type key struct{ pkg, test string }

// heartbeat names the packages still running when none has finished for
// quiet.
func (p *progress) heartbeat(quiet time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(quiet / 3)
	defer tick.Stop()
	said := time.Time{}
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		if len(p.running) > 0 && time.Since(p.last) >= quiet && time.Since(said) >= quiet {
			said = time.Now()
			var names []string
			for pkg, at := range p.running {
				names = append(names, fmt.Sprintf("%s (%ds)", short(pkg), int(time.Since(at).Seconds())))
			}
			sort.Strings(names)
			fmt.Fprintf(p.out, "%s ...   running: %s\n", p.clock(), strings.Join(names, ", "))
		}
		p.mu.Unlock()
	}
}

// summary prints the slowest tests and the totals, and returns the exit
// status the events call for.
func (p *progress) summary(slow int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	sort.Slice(p.tests, func(i, j int) bool { return p.tests[i].elapsed > p.tests[j].elapsed })
	if n := min(slow, len(p.tests)); n > 0 {
		fmt.Fprintf(p.out, "slowest tests:\n")
		for _, r := range p.tests[:n] {
			fmt.Fprintf(p.out, "  %6.1fs  %s %s\n", r.elapsed, r.pkg, r.test)
		}
	}
	// A package that started and never ended (its test binary was killed,
	// or go test stopped early) counts as failed.
	for pkg := range p.running {
		p.failed = append(p.failed, short(pkg)+" (no result)")
	}
	status := "ok"
	if len(p.failed) > 0 || p.failures > 0 {
		status = "FAIL"
	}
	fmt.Fprintf(p.out, "%s: %d packages ok, %d failed, %d tests failed, %s wall\n",
		status, len(p.passed), len(p.failed), p.failures, time.Since(p.start).Round(100*time.Millisecond))
	if len(p.failed) > 0 {
		fmt.Fprintf(p.out, "failed: %s\n", strings.Join(p.failed, " "))
	}
	if status != "ok" {
		return 1
	}
	return 0
}

// clock is the time since the start, as [m:ss].
func (p *progress) clock() string {
	d := time.Since(p.start)
	return fmt.Sprintf("[%d:%02d]", int(d.Minutes()), int(d.Seconds())%60)
}

// short drops the module path prefix.
func short(pkg string) string {
	const mod = "github.com/redisync/redisync"
	switch {
	case pkg == mod:
		return "."
	case strings.HasPrefix(pkg, mod+"/"):
		return strings.TrimPrefix(pkg, mod+"/")
	}
	return pkg
}
