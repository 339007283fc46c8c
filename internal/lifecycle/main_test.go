package lifecycle

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// The model's budget in make test: defaultChecks rapid runs in all, split
// over defaultShards models that run at once, each on its own servers. A
// run is about forty steps against real servers, some of which wait out a
// lease, so the runs mostly wait: four shards of five runs take about the
// time of five (some twenty seconds here) where twenty in a row took a
// minute. rapid's default of 100 runs would take minutes.
//
// The longer budgets (docs/testing.md): RAPID_CHECKS or -rapid.checks sets
// the runs of each shard, LIFECYCLE_SHARDS the number of shards; CI runs
// 4 x 15 (.ci/run). A -rapid.seed replays one sequence, in one shard.
const (
	defaultChecks = 20
	defaultShards = 4
	defaultSteps  = 40
	shardsEnv     = "LIFECYCLE_SHARDS"
)

// shards is the number of models run at once.
func shards() int {
	if f := flag.Lookup("rapid.seed"); f != nil && f.Value.String() != "0" {
		return 1 // every shard would draw the same sequence
	}
	if v, err := strconv.Atoi(os.Getenv(shardsEnv)); err == nil && v > 0 {
		return v
	}
	return defaultShards
}

// checksPerShard is the number of rapid runs of each shard.
func checksPerShard() int {
	n, _ := strconv.Atoi(flag.Lookup("rapid.checks").Value.String())
	return n
}

// setDefault sets flag name to value unless the command line or the
// environment variable env gave it.
func setDefault(name, env, value string) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if _, ok := os.LookupEnv(env); set || ok {
		return
	}
	if err := flag.Set(name, value); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	setDefault("rapid.checks", "RAPID_CHECKS", strconv.Itoa((defaultChecks+shards()-1)/shards()))
	setDefault("rapid.steps", "RAPID_STEPS", strconv.Itoa(defaultSteps))
	// A failing case is reproduced with the -rapid.seed it prints; fail
	// files would litter the source tree.
	setDefault("rapid.nofailfile", "RAPID_NOFAILFILE", "true")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
