package lifecycle

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// defaultChecks is the number of rapid runs when -rapid.checks is not given:
// each run is about thirty steps against real servers, some of which wait
// out a lease, so rapid's default of 100 would take minutes. CI runs this
// many; raise it on the command line to search harder.
const (
	defaultChecks = 20
	defaultSteps  = 40
)

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
	setDefault("rapid.checks", "RAPID_CHECKS", strconv.Itoa(defaultChecks))
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
