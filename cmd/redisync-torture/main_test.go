package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// binary is the command built once, so the tests run it as users do (and
// --processes can re-execute it as its workers).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redisync-torture-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "redisync-torture")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build redisync-torture: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func harness(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code, out.String(), errOut.String()}
}

func TestRunsAndPrintsTheTable(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.json")
	r := harness(t, "--primitive", "fairlock", "--scenario", "pubsub-kill", "--duration", "1s", "--lease", "300ms", "--json", report)
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"scenario", "fairlock", "pubsub-kill", "ok"} {
		assert.Contains(t, r.stdout, want)
	}
	b, err := os.ReadFile(report)
	require.NoError(t, err)
	var reps []map[string]any
	require.NoError(t, json.Unmarshal(b, &reps))
	require.Len(t, reps, 1)
	assert.Positive(t, reps[0]["grants"])
	assert.Equal(t, "fairlock", reps[0]["primitive"])
}

// With --processes the workers are processes of this binary (main hands
// them to torture.ChildMain), SIGKILLed by the crash nemesis.
func TestProcessesAreChildrenOfTheBinary(t *testing.T) {
	r := harness(t, "--processes", "--scenario", "crash", "--duration", "2s", "--lease", "300ms", "--workers", "3", "--names", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "crash")
}

func TestHelpAndOneLineErrors(t *testing.T) {
	for _, help := range []string{"--help", "-h"} {
		r := harness(t, help)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "usage: redisync-torture")
		assert.Contains(t, r.stdout, "-scenario")
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--scenario", "nope"}, exitFailed, "unknown scenario"},
		{[]string{"--primitive", "mutex"}, exitFailed, "unknown primitive"},
		{[]string{"--primitive", "rlock", "--scenario", "split-brain"}, exitFailed, "redlock only"},
		{[]string{"--bogus"}, exitUsage, "-bogus"},
		{[]string{"extra"}, exitUsage, "unexpected argument"},
	} {
		r := harness(t, c.args...)
		assert.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.want, "%v", c.args)
		last := r.stderr[strings.LastIndex(strings.TrimSpace(r.stderr), "\n")+1:]
		assert.Contains(t, last, c.want, "%v: the error is not the last line: %q", c.args, r.stderr)
		assert.NotContains(t, r.stderr, "goroutine", "%v", c.args)
	}
}
