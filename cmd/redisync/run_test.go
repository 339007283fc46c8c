package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// background starts the binary and returns a function that waits for its
// end (within limit) and returns the result. Output goes to files, not
// pipes: a process left behind holding them cannot keep Wait waiting.
func background(t *testing.T, e *locktest.Env, args ...string) (*exec.Cmd, func(limit time.Duration) cliResult) {
	t.Helper()
	cmd := command(e, args...)
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	require.NoError(t, err)
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	require.NoError(t, err)
	t.Cleanup(func() { outF.Close(); errF.Close() })
	cmd.Stdout, cmd.Stderr = outF, errF
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	read := func(f *os.File) string { b, _ := os.ReadFile(f.Name()); return string(b) }
	return cmd, func(limit time.Duration) cliResult {
		t.Helper()
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			return cliResult{code, read(outF), read(errF)}
		case <-time.After(limit):
			t.Fatalf("%v still running after %v; stderr: %s", args, limit, read(errF))
			return cliResult{}
		}
	}
}

// A server that stalls for 2.5 s while run waits is not "busy": an attempt
// caught in the stall fails (the library bounds it by 2 s), and run tries
// again within --wait. The holder, another run with a 1 s lease, loses the
// lock in the stall and says why; the waiter gets it after.
func TestRunWaitsOutAServerStall(t *testing.T) {
	for _, wait := range []string{"1m", "forever"} {
		t.Run(wait, func(t *testing.T) {
			t.Parallel() // each on a server of its own
			e := locktest.Setup(t)
			_, holder := background(t, e, "run", "--lease", "1s", "--grace", "1s", "job:stall", "--",
				"sh", "-c", `trap 'exit 0' TERM; while :; do sleep 0.05; done`)
			locktest.Eventually(t, 5*time.Second, func() bool { return e.Exists(t, "job:stall") }, "lock taken")
			_, result := background(t, e, "run", "--wait", wait, "job:stall", "--", "true")
			time.Sleep(700 * time.Millisecond) // waiting, retrying as the lease nears its end
			e.Srv.Pause()
			time.Sleep(2500 * time.Millisecond)
			e.Srv.Resume()
			r := result(30 * time.Second)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.NotContains(t, r.stderr, "busy")
			h := holder(30 * time.Second)
			assert.Equal(t, exitLost, h.code, h.stderr)
			assert.Regexp(t, `lock lost while the command runs: (renewal could not reach Redis|its key is gone)`, h.stderr, "the loss says why")
		})
	}
}

// A Redis restart while run waits (--wait 10m) is retried: once the server
// is back (empty), run takes the lock and runs the command.
func TestRunWaitsThroughARedisRestart(t *testing.T) {
	e := locktest.Setup(t)
	other := e.Client(t)
	holder := rlock.New(other, "job:restart")
	require.NoError(t, holder.Lock(locktest.Bg()))
	marker := filepath.Join(t.TempDir(), "ran")
	_, result := background(t, e, "run", "--wait", "10m", "job:restart", "--", "touch", marker)
	time.Sleep(500 * time.Millisecond)
	e.Srv.Kill()
	time.Sleep(time.Second) // run's connection fails meanwhile
	e.Srv.Restart()
	r := result(30 * time.Second)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, marker)
}

// 75 means "held by others when --wait passed"; a Redis that cannot be
// reached until then is exit 1, saying so.
func TestRunExitCodesSayWhatHappened(t *testing.T) {
	e := locktest.Setup(t)
	holder := rlock.New(e.C, "job:codes")
	require.NoError(t, holder.Lock(locktest.Bg()))
	r := cli(t, e, "", "run", "--wait", "300ms", "job:codes", "--", "true")
	assert.Equal(t, exitBusy, r.code, r.stderr)
	assert.Contains(t, r.stderr, holder.Owner(), "the busy message names the holder")
	assert.Contains(t, r.stderr, "--wait 300ms")

	_, result := background(t, e, "run", "--wait", "1s", "job:codes", "--", "true")
	time.Sleep(300 * time.Millisecond)
	e.Srv.Kill()
	r = result(20 * time.Second)
	assert.Equal(t, exitError, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "busy")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
}

// kill -9 of redisync ends the command within a second: it must not run on
// without the lock.
func TestKill9OfRedisyncEndsTheCommand(t *testing.T) {
	e := locktest.Setup(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, result := background(t, e, "run", "job:kill9", "--", "sh", "-c", `echo $$ > `+pidFile+`.tmp; mv `+pidFile+`.tmp `+pidFile+`; while :; do sleep 0.05; done`)
	pid := commandPID(t, pidFile)
	require.True(t, alive(pid))
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	result(5 * time.Second)
	killed := time.Now()
	for alive(pid) && time.Since(killed) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	assert.False(t, alive(pid), "the command outlived redisync")
	assert.Less(t, time.Since(killed), time.Second, "the command ended too late")
}

// commandPID waits for the command to write its pid (the id of its process
// group) to pidFile, and makes sure the group is gone when the test ends,
// whatever redisync did.
func commandPID(t *testing.T, pidFile string) int {
	t.Helper()
	var pid int
	locktest.Eventually(t, 10*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, "the command started")
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	return pid
}

// alive reports whether pid runs (a zombie has ended).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// SIGHUP is passed on like SIGTERM, and the hold released after.
func TestRunForwardsSIGHUP(t *testing.T) {
	e := locktest.Setup(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, result := background(t, e, "run", "job:hup", "--", "sh", "-c", `trap 'echo got-hup; exit 4' HUP; echo $$ > `+pidFile+`.tmp; mv `+pidFile+`.tmp `+pidFile+`; while :; do sleep 0.05; done`)
	commandPID(t, pidFile) // the trap is set
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	r := result(10 * time.Second)
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Contains(t, r.stdout, "got-hup")
	assert.False(t, e.Exists(t, "job:hup"))
}

// A stopped command (here it stops itself with SIGTTIN, as one that reads
// the terminal from the background is stopped) is reported, and a signal
// to redisync still ends it.
func TestRunReportsAStoppedCommand(t *testing.T) {
	e := locktest.Setup(t)
	cmd, result := background(t, e, "run", "job:stopped", "--", "sh", "-c", `kill -TTIN $$; echo resumed`)
	locktest.Eventually(t, 10*time.Second, func() bool { return e.Exists(t, "job:stopped") }, "lock taken")
	time.Sleep(3 * stopPoll) // a poll or two after the stop, with room for a loaded box
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	r := result(10 * time.Second)
	assert.Contains(t, r.stderr, "is stopped", "the stop is said plainly")
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code, r.stderr)
	assert.False(t, e.Exists(t, "job:stopped"))
}

// Flags stand anywhere before --; -- is required before the command.
func TestRunFlagsAnywhereBeforeTheCommand(t *testing.T) {
	e := locktest.Setup(t)
	holder := rlock.New(e.C, "job:flags")
	require.NoError(t, holder.Lock(locktest.Bg()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "run", "job:flags", "--wait", "0", "--", "true")
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+e.Srv.Addr())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, string(out))
	assert.Equal(t, exitBusy, ee.ExitCode(), "--wait 0 after NAME is a flag: %s", out)
	require.NoError(t, holder.Unlock(locktest.Bg()))

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "--", "echo", "x"}, "NAME is missing"},
		{[]string{"run", "job:flags", "echo", "x"}, "put --"},
		{[]string{"run", "job:flags"}, "NAME -- CMD"},
		{[]string{"run", "job:flags", "--"}, "command is missing"},
		{[]string{"run", "a", "b", "--", "true"}, "one NAME"},
		{[]string{"sem", "run", "--permits", "1", "--", "echo"}, "NAME is missing"},
	} {
		r := cli(t, e, "", c.args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.says, "%v", c.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "%v: %q", c.args, r.stderr)
	}
	assert.Zero(t, e.DBSize(t), "no lock named echo: %v", e.Keys(t))

	r := cli(t, e, "", "run", "job:flags", "--fence-env", "T", "--", "sh", "-c", `echo "$T"`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotEmpty(t, strings.TrimSpace(r.stdout))
	r = cli(t, e, "", "inspect", "job:flags", "--json")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"kind": "none"`)
}

// sem run refuses a --permits that differs from the stored capacity unless
// --set-permits; sem set-permits changes it.
func TestSemCapacityIsNeverIgnored(t *testing.T) {
	e := locktest.Setup(t)
	s := semaphore.New(e.C, "pool:cap", 2)
	n, err := s.Capacity(locktest.Bg())
	require.NoError(t, err)
	require.Equal(t, 2, n)
	r := cli(t, e, "", "sem", "run", "--permits", "5", "pool:cap", "--", "true")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "capacity 2")
	assert.Contains(t, r.stderr, "--set-permits")
	r = cli(t, e, "", "sem", "run", "--permits", "5", "--set-permits", "pool:cap", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	n, err = s.Capacity(locktest.Bg())
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	r = cli(t, e, "", "sem", "set-permits", "pool:cap", "3")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "capacity 3 (was 5)")
	n, err = s.Capacity(locktest.Bg())
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	r = cli(t, e, "", "sem", "run", "--permits", "3", "pool:cap", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	r = cli(t, e, "", "sem", "set-permits", "pool:cap", "-1")
	assert.Equal(t, exitUsage, r.code)
	r = cli(t, e, "", "sem", "set-permits", "--help")
	assert.Equal(t, 0, r.code)
}

// --verbose says who holds the lock while waiting; a loss says why.
func TestRunVerboseAndTheReasonForALoss(t *testing.T) {
	e := locktest.Setup(t)
	holder := rlock.New(e.C, "job:verbose")
	require.NoError(t, holder.Lock(locktest.Bg()))
	r := cli(t, e, "", "run", "--verbose", "--wait", "2500ms", "job:verbose", "--", "true")
	assert.Equal(t, exitBusy, r.code, r.stderr)
	assert.Contains(t, r.stderr, "waiting for job:verbose")
	assert.Contains(t, r.stderr, "held by "+holder.Owner())
	assert.Contains(t, r.stderr, "lease")
	require.NoError(t, holder.Unlock(locktest.Bg()))

	// The loss must be found by a renewal that sees the key gone, before
	// the lease runs out. A 300 ms lease left 200 ms for that, and a
	// starved process (load 47 beside a second make test) missed it and
	// reported an unreachable Redis instead; 2 s leaves over a second.
	_, result := background(t, e, "run", "--lease", "2s", "--grace", "2s", "job:verbose", "--", "sh", "-c", `trap 'exit 0' TERM; while :; do sleep 0.05; done`)
	locktest.Eventually(t, 5*time.Second, func() bool { return e.Exists(t, "job:verbose") }, "lock taken")
	e.Do(t, "DEL", "job:verbose")
	r = result(10 * time.Second)
	assert.Equal(t, exitLost, r.code, r.stderr)
	assert.Contains(t, r.stderr, "key is gone", "the loss says why")
}

// --version and a bare host:port.
func TestVersionAndHostPort(t *testing.T) {
	e := locktest.Setup(t)
	r := cli(t, e, "", "--version")
	assert.Equal(t, 0, r.code)
	assert.True(t, strings.HasPrefix(r.stdout, "redisync "), r.stdout)
	assert.Contains(t, r.stdout, "go1.")
	r = cli(t, e, "", "inspect", "--redis", e.Srv.Addr(), "x")
	assert.Equal(t, 0, r.code, r.stderr)
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"sem", "run", "--help"}} {
		r = cli(t, e, "", args...)
		assert.Contains(t, r.stdout, "exit statuses", "%v", args)
		assert.Contains(t, r.stdout, "75", "%v", args)
	}
	r = cli(t, e, "", "run", "--help")
	assert.Contains(t, r.stdout, "redis://[user:password@]host", "the synopsis of a URL is not taken for a credential")
}
