package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/locktest"
)

// `run --wait 0` ("try once") against a server that stops answering at the
// start gives up within the help's bound, 3.25 s after --wait passed: its
// one connect attempt gets connectTryMin, as an attempt within a --wait does
// (it got the connect's own 5 s timeout).
func TestRunWaitZeroOnAStalledServerGivesUpWithinTheHelpsBound(t *testing.T) {
	e := locktest.Setup(t)
	e.Srv.Pause()
	defer e.Srv.Resume()
	for _, args := range [][]string{
		{"run", "--wait", "0", "w0", "--", "true"},
		{"run", "--fair", "--wait", "0", "w0f", "--", "true"},
		{"sem", "run", "--permits", "1", "--wait", "0", "w0s", "--", "true"},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+e.Srv.Addr())
		start := time.Now()
		out, _ := cmd.CombinedOutput()
		took := time.Since(start)
		t.Logf("%v: exit %d after %v: %s", args, cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), strings.TrimSpace(string(out)))
		assert.Equal(t, exitError, cmd.ProcessState.ExitCode(), "%v", args)
		assert.LessOrEqual(t, took, stallBound+500*time.Millisecond, "%v: gave up later than the help's bound (--wait 0 + %v)", args, stallBound)
	}
}
