// Command bench measures redisync against the physical limit of the Redis
// server and against the Go lock libraries people use instead, in one run,
// on servers it starts itself. Every figure is reported as a ratio to
// something measured in the same run; absolute times on a shared machine
// are noise.
//
//	cd bench && go run .          # the full run (a few minutes)
//	cd bench && go run . -quick   # a one-minute subset (what CI runs)
//	cd bench && go run . -cost    # server instructions per operation (callgrind)
//	cd bench && go run . -cost -fn  # the same pairs by FCALL of a Functions library
//	cd bench && go run . -distinct  # scenario 2 alone, each run between two of the limit (~1 min)
//	cd bench && go run . -watchdog 100000:3s:60s  # scenario 5 alone: holds, lease, window (make watchdog)
//
// It prints a markdown table to stdout and writes results.json and
// chart.svg (the README embeds the chart).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(child(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == rateChildFlag {
		os.Exit(rateChild(os.Args[2:]))
	}
	quick := flag.Bool("quick", false, "a one-minute subset (fewer sizes, shorter runs)")
	out := flag.String("out", ".", "directory for results.json and chart.svg")
	cost := flag.Bool("cost", false, "the server-cost scenario alone: redis-server instructions per operation under callgrind (make cost)")
	only := flag.String("only", "", "with -cost or -distinct: the primitives to count, comma-separated name prefixes (\"rwlock,semaphore\"); the reference rows always run")
	fn := flag.Bool("fn", false, "with -cost: the Functions experiment (issue 24): the rlock, rwlock read and bare pairs by EVALSHA and by FCALL of a library, and FUNCTION LOAD's cost")
	distinct := flag.Bool("distinct", false, "scenario 2 alone (distinct keys, 64 and 1,024 goroutines, the redisync primitives; -only picks them): each run between two of the limit, with client and server CPU per pair")
	rounds := flag.Int("rounds", 1, "with -distinct: how many times to repeat it")
	dur := flag.Duration("dur", 2*time.Second, "with -distinct: the length of each run")
	profile := flag.String("cpuprofile", "", "with -distinct: write this process's CPU profile (the client side) to this file")
	rate := flag.Bool("ratelimit", false, "the rate-limit scenario alone (issue 26): accuracy and decisions/s against go-redis/redis_rate, Wait's lateness")
	wd := flag.String("watchdog", "", "scenario 5 alone at a chosen size: N:LEASE:WINDOW holds, lease and watched window (100000:3s:60s; make watchdog)")
	wdProfile := flag.String("wdprofile", "", "with -watchdog: a directory for the client's cpu.pprof and allocs.pprof over the window")
	flag.Parse()
	if *wd != "" {
		spec, err := parseHoldSpec(*wd)
		if err == nil {
			spec.profile = *wdProfile
			err = runWatchdog(spec)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench -watchdog:", err)
			os.Exit(1)
		}
		return
	}
	if *rate {
		if err := runRateLimit(); err != nil {
			fmt.Fprintln(os.Stderr, "bench -ratelimit:", err)
			os.Exit(1)
		}
		return
	}
	if *distinct {
		if err := runDistinct(*rounds, *dur, strings.Split(*only, ","), *profile); err != nil {
			fmt.Fprintln(os.Stderr, "bench -distinct:", err)
			os.Exit(1)
		}
		return
	}
	if *cost && *fn {
		if err := runFnCost(); err != nil {
			fmt.Fprintln(os.Stderr, "bench -cost -fn:", err)
			os.Exit(1)
		}
		return
	}
	if *cost {
		if err := runCost(strings.Split(*only, ",")); err != nil {
			fmt.Fprintln(os.Stderr, "bench -cost:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*quick, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(quick bool, outDir string) error {
	started := time.Now()
	servers := make([]*redistest.Server, 6) // 0: the main server; 1-5: Redlock nodes
	for i := range servers {
		s, err := redistest.StartMain()
		if err != nil {
			return err
		}
		defer s.Kill()
		servers[i] = s
	}
	r := &runner{quick: quick, addr: servers[0].Addr(), log: os.Stderr}
	for _, s := range servers[1:] {
		r.nodes = append(r.nodes, s.Addr())
	}
	r.report.Meta = meta(r, quick)
	progress := func(name string, f func() error) error {
		fmt.Fprintf(os.Stderr, "== %s\n", name)
		t := time.Now()
		err := f()
		fmt.Fprintf(os.Stderr, "   (%v)\n", time.Since(t).Round(time.Second))
		return err
	}
	steps := []struct {
		name string
		f    func() error
	}{
		{"reference points: rtt and the limit", r.references},
		{"1. uncontended latency", r.uncontended},
		{"2. throughput on distinct keys", r.throughput},
		{"3. one hot key", r.hotKey},
		{"4. hand-off latency", r.handoff},
		{"5. watchdog scale", r.watchdogScale},
		{"6. Redlock", r.redlock},
		{"7. fairness", r.fairness},
	}
	for _, s := range steps {
		if err := progress(s.name, s.f); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	r.report.Meta.Seconds = time.Since(started).Seconds()
	fmt.Print(r.report.markdown())
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "results.json"), r.report.json(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "chart.svg"), []byte(r.report.svg()), 0o644); err != nil {
		return err
	}
	return validate(filepath.Join(outDir, "results.json"))
}

// validate reads the written results back: valid JSON, with results for
// every scenario (what CI checks; the numbers themselves are not judged).
func validate(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	for _, prefix := range []string{"reference", "1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "7 "} {
		found := false
		for _, x := range rep.Results {
			if strings.HasPrefix(x.Scenario, prefix) && !math.IsNaN(x.Value) && !math.IsInf(x.Value, 0) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("results.json: no valid result for scenario %q", strings.TrimSpace(prefix))
		}
	}
	return nil
}

func meta(r *runner, quick bool) Meta {
	version := "unknown"
	if out, err := redisVersion(r.addr); err == nil {
		version = out
	}
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				_, cpu, _ = strings.Cut(line, ": ")
				break
			}
		}
	}
	return Meta{
		Date: time.Now().UTC().Format("2006-01-02"), Cores: runtime.NumCPU(), CPU: cpu,
		Redis: version, Go: runtime.Version(), Quick: quick,
	}
}
