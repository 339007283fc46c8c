package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// stallBound is how much longer than --wait the command may take to give
// up when Redis stops answering, as its help says: the wait's own return
// (redisync.UndoWait), one last try (finalTryLimit), the way out
// (exitCloseTimeout).
const stallBound = redisync.UndoWait + finalTryLimit + exitCloseTimeout

// Issue 22: the command's part of the ctx-bound table. Each row's command
// is waiting for a lock that others hold when the server is stopped
// (SIGSTOP); it must exit within --wait plus stallBound, with status 1 (Redis
// did not answer) — not wait on without bound.
func TestCommandsGiveUpWithinTheirBoundWhileTheServerStalls(t *testing.T) {
	e := locktest.Setup(t)
	ctx := context.Background()
	require.NoError(t, rlock.New(e.C, "cb:run").Lock(ctx))
	require.NoError(t, fairlock.New(e.C, "cb:fair").Lock(ctx))
	sem := semaphore.New(e.C, "cb:sem", 1)
	_, err := sem.Acquire(ctx, 1)
	require.NoError(t, err)
	const wait = time.Second
	rows := []struct {
		name    string
		args    []string
		waiting func() bool
	}{
		{"run", []string{"run", "--wait", wait.String(), "cb:run", "--", "true"}, func() bool {
			n, err := e.RC.Do(ctx, e.RC.B().PubsubNumsub().Channel("redisson_lock__channel:{cb:run}").Build()).AsIntMap()
			return err == nil && n["redisson_lock__channel:{cb:run}"] > 0
		}},
		{"run --fair", []string{"run", "--fair", "--wait", wait.String(), "cb:fair", "--", "true"}, func() bool {
			q, err := fairlock.New(e.C, "cb:fair").Queue(ctx)
			return err == nil && len(q) > 0
		}},
		{"sem run", []string{"sem", "run", "--wait", wait.String(), "--permits", "1", "cb:sem", "--", "true"}, func() bool {
			n, err := sem.Waiting(ctx)
			return err == nil && n > 0
		}},
	}
	type result struct {
		code int
		took time.Duration
		err  string
	}
	results := make([]result, len(rows)+1) // the last: unlock's
	var wg sync.WaitGroup
	for i, r := range rows {
		cmd := command(e, r.args...)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		start := time.Now()
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			results[i] = result{code, time.Since(start), errOut.String()}
		}()
		locktest.Eventually(t, wait/2, r.waiting, r.name+" never waited")
	}
	e.Srv.Pause()
	// unlock has no --wait: it starts during the stall, and its bound is its
	// connect's (connectTimeout) and the way out, as its help says.
	unlock := command(e, "unlock", "--force", "--yes", "cb:run")
	var unlockErr bytes.Buffer
	unlock.Stderr = &unlockErr
	unlockStart := time.Now()
	require.NoError(t, unlock.Start())
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := unlock.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		results[len(rows)] = result{code, time.Since(unlockStart), unlockErr.String()}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait + stallBound + 5*time.Second):
	}
	e.Srv.Resume()
	<-done
	u := results[len(rows)]
	t.Logf("unlock: exit %d after %v: %s", u.code, u.took, u.err)
	assert.Equal(t, exitError, u.code, "unlock: %s", u.err)
	assert.Less(t, u.took, connectTimeout+exitCloseTimeout+1500*time.Millisecond, "unlock outlived its bound")
	assert.Contains(t, strings.Join(strings.Fields(runAboutTail), " "),
		fmt.Sprintf("at most %g s after --wait passed", stallBound.Seconds()), "the help states the bound")
	for i, r := range rows {
		res := results[i]
		t.Logf("%s: exit %d after %v: %s", r.name, res.code, res.took, res.err)
		assert.Equal(t, exitError, res.code, "%s: %s", r.name, res.err)
		// took counts from the process's start: its connect comes before
		// the wait; the margin covers it and a loaded machine.
		assert.Less(t, res.took, wait+stallBound+1500*time.Millisecond, "%s outlived its bound", r.name)
	}
}

// run at its start, with Redis down or stopped (SIGSTOP: connections are
// accepted, nothing answers): a connect attempt gets what is left of
// --wait (at least connectTryMin), one that gets no answer in time is
// retried as a refused one is, and run exits 1 once --wait has passed —
// within stallBound of it, as the help says. The dial_timeout row makes
// an attempt end before --wait, so that only a retry reaches it.
func TestRunAtStartRetriesTheConnectUntilWaitPasses(t *testing.T) {
	e := locktest.Setup(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := l.Addr().String()
	l.Close()
	rows := []struct {
		name, url, wait string
		min, max        time.Duration
	}{
		{"down --wait 1s", down, "1s", time.Second, time.Second + stallBound},
		{"stalled --wait 1s", e.Srv.Addr(), "1s", time.Second, time.Second + stallBound},
		{"stalled, dial_timeout=1s, --wait 3s", e.Srv.Addr() + "?dial_timeout=1s", "3s", 3 * time.Second, 3*time.Second + stallBound},
	}
	e.Srv.Pause()
	defer e.Srv.Resume()
	for _, r := range rows {
		cmd := exec.Command(binary, "run", "--wait", r.wait, "start:stall", "--", "true")
		cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+r.url)
		start := time.Now()
		out, _ := cmd.CombinedOutput()
		took := time.Since(start)
		t.Logf("%s: exit %d after %v: %s", r.name, cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), strings.TrimSpace(string(out)))
		assert.Equal(t, exitError, cmd.ProcessState.ExitCode(), r.name)
		assert.GreaterOrEqual(t, took, r.min, "%s: gave up before --wait passed", r.name)
		assert.LessOrEqual(t, took, r.max+500*time.Millisecond, "%s: gave up later than the help's bound", r.name)
		assert.Contains(t, string(out), "retried until --wait "+r.wait+" passed", r.name)
	}
}

// run's way out when the server stops answering while the command runs:
// after the command exits by itself, or after a SIGTERM passed on to it,
// the release and letting go of the connection take at most
// exitCloseTimeout plus the release's own return (redisync.UndoWait), as
// the help says; the hold is left to expire by its lease.
func TestRunLetsGoWithinItsBoundWhenTheServerStallsUnderTheCommand(t *testing.T) {
	bound := redisync.UndoWait + exitCloseTimeout
	assert.Contains(t, strings.Join(strings.Fields(runAboutTail), " "),
		fmt.Sprintf("take at most %g s when the server stops answering", bound.Seconds()), "the help states the bound")
	for _, sigterm := range []bool{false, true} {
		e := locktest.Setup(t)
		argv := []string{"run", "out:stall", "--", "sleep", "1"}
		if sigterm {
			argv[len(argv)-1] = "30"
		}
		cmd := command(e, argv...)
		var errOut strings.Builder
		cmd.Stderr = &errOut
		start := time.Now()
		require.NoError(t, cmd.Start())
		time.Sleep(500 * time.Millisecond)
		e.Srv.Pause()
		time.Sleep(500 * time.Millisecond)
		if sigterm {
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		}
		_ = cmd.Wait()
		e.Srv.Resume()
		after := time.Since(start) - time.Second
		t.Logf("sigterm %v: run exited %v after its command (status %d): %s", sigterm, after.Round(time.Millisecond), cmd.ProcessState.ExitCode(), strings.TrimSpace(errOut.String()))
		assert.Less(t, after, bound+500*time.Millisecond, "sigterm %v: run's way out", sigterm)
		assert.Contains(t, errOut.String(), "it expires within --lease", "sigterm %v: the release's failure is said", sigterm)
	}
}
