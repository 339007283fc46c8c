package fairlock

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stallProcess stops this whole test process (SIGSTOP: every thread) for
// about d, as a loaded machine that keeps it off the CPU does, while Redis
// runs on. A child shell waits until the process is stopped, sleeps d and
// continues it; it continues it in any case after a few seconds, so a
// failure cannot leave the test stopped. (redlock's tests have the same
// helper.)
func stallProcess(t *testing.T, d time.Duration) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc/<pid>/status")
	}
	pid := strconv.Itoa(os.Getpid())
	const script = `i=0
while [ $i -lt 3000 ] && ! grep -q '^State:[[:space:]]*T' /proc/$1/status; do sleep 0.001; i=$((i+1)); done
sleep $2
kill -CONT $1`
	cmd := exec.Command("sh", "-c", script, "sh", pid, strconv.FormatFloat(d.Seconds(), 'f', 3, 64))
	require.NoError(t, cmd.Start())
	start := time.Now()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGSTOP))
	require.NoError(t, cmd.Wait())
	require.GreaterOrEqual(t, time.Since(start), d, "the process was not stopped")
}
