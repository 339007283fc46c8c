package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
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
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// cli runs the built binary against srv and returns its exit status and output.
type cliResult struct {
	code           int
	stdout, stderr string
}

func cli(t *testing.T, e *locktest.Env, stdin string, args ...string) cliResult {
	t.Helper()
	cmd := command(e, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return cliResult{code, out.String(), errOut.String()}
}

func command(e *locktest.Env, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+e.Srv.Addr())
	return cmd
}

func TestRunExitsWithTheCommandsStatusAndReleases(t *testing.T) {
	e := locktest.Setup(t)
	r := cli(t, e, "", "run", "job:exit", "--", "sh", "-c", "exit 7")
	assert.Equal(t, 7, r.code, r.stderr)
	assert.False(t, e.Exists(t, "job:exit"), "lock left behind")
	r = cli(t, e, "", "run", "--fence-env", "TOKEN", "job:exit", "--", "sh", "-c", `echo "token=$TOKEN"`)
	require.Equal(t, 0, r.code, r.stderr)
	tok, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(r.stdout), "token="), 10, 64)
	require.NoError(t, err, r.stdout)
	assert.Positive(t, tok)
	r = cli(t, e, "", "run", "--fair", "job:exit", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	r = cli(t, e, "", "run", "job:exit", "--", "/no/such/command")
	assert.Equal(t, exitNoStart, r.code)
	assert.Zero(t, e.DBSize(t))
}

func TestTwoRunsSerialize(t *testing.T) {
	e := locktest.Setup(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := fmt.Sprintf(`date +%%s%%N > %[1]s/%[2]d.start; sleep 0.3; date +%%s%%N > %[1]s/%[2]d.end`, dir, i)
			if r := cli(t, e, "", "run", "cron:nightly", "--", "sh", "-c", script); r.code != 0 {
				t.Errorf("run %d: %d %s", i, r.code, r.stderr)
			}
		}()
	}
	wg.Wait()
	type span struct{ start, end int64 }
	var spans []span
	for i := range 3 {
		read := func(ext string) int64 {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.%s", i, ext)))
			require.NoError(t, err)
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			require.NoError(t, err)
			return n
		}
		spans = append(spans, span{read("start"), read("end")})
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].start < spans[b].start })
	for i := 1; i < len(spans); i++ {
		assert.GreaterOrEqual(t, spans[i].start, spans[i-1].end, "runs %d and %d overlapped", i-1, i)
	}
}

func TestRunGivesUpAfterWait(t *testing.T) {
	e := locktest.Setup(t)
	holder := rlock.New(e.C, "job:busy")
	require.NoError(t, holder.Lock(locktest.Bg()))
	start := time.Now()
	r := cli(t, e, "", "run", "--wait", "200ms", "job:busy", "--", "touch", filepath.Join(t.TempDir(), "ran"))
	assert.Equal(t, exitBusy, r.code)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
	assert.Contains(t, r.stderr, "busy")
	r = cli(t, e, "", "run", "--wait", "0", "job:busy", "--", "true")
	assert.Equal(t, exitBusy, r.code)
	require.NoError(t, holder.Unlock(locktest.Bg()))
}

func TestRunForwardsSignalsAndReleasesAfter(t *testing.T) {
	e := locktest.Setup(t)
	cmd := command(e, "run", "job:signal", "--", "sh", "-c", `trap 'echo got-term; exit 3' TERM; while :; do sleep 0.05; done`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	locktest.Eventually(t, 5*time.Second, func() bool { return e.Exists(t, "job:signal") }, "lock taken")
	time.Sleep(100 * time.Millisecond) // the trap is set
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, out.String())
	assert.Equal(t, 3, ee.ExitCode(), out.String())
	assert.Contains(t, out.String(), "got-term")
	assert.False(t, e.Exists(t, "job:signal"), "released after the command exited")
}

func TestLostLockTerminatesTheCommand(t *testing.T) {
	e := locktest.Setup(t)
	marker := filepath.Join(t.TempDir(), "terminated")
	cmd := command(e, "run", "--lease", "300ms", "--grace", "2s", "job:lost", "--",
		"sh", "-c", `trap 'touch `+marker+`; exit 0' TERM; while :; do sleep 0.05; done`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	locktest.Eventually(t, 5*time.Second, func() bool { return e.Exists(t, "job:lost") }, "lock taken")
	time.Sleep(100 * time.Millisecond)
	e.Do(t, "DEL", "job:lost")
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, out.String())
	assert.Equal(t, exitLost, ee.ExitCode(), out.String())
	assert.FileExists(t, marker, "the command got SIGTERM")
	assert.Contains(t, out.String(), "lost")
}

func TestSemRunLimitsConcurrency(t *testing.T) {
	e := locktest.Setup(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := fmt.Sprintf(`echo start $(date +%%s%%N) >> %[1]s/log; sleep 0.2; echo end $(date +%%s%%N) >> %[1]s/log`, dir)
			if r := cli(t, e, "", "sem", "run", "--permits", "2", "pool:x", "--", "sh", "-c", script); r.code != 0 {
				t.Errorf("sem run %d: %d %s", i, r.code, r.stderr)
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	require.NoError(t, err)
	type ev struct {
		at    int64
		delta int
	}
	var evs []ev
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		n, _ := strconv.ParseInt(f[1], 10, 64)
		d := 1
		if f[0] == "end" {
			d = -1
		}
		evs = append(evs, ev{n, d})
	}
	sort.Slice(evs, func(a, b int) bool {
		return evs[a].at < evs[b].at || evs[a].at == evs[b].at && evs[a].delta < evs[b].delta
	})
	running, peak := 0, 0
	for _, x := range evs {
		running += x.delta
		peak = max(peak, running)
	}
	assert.Len(t, evs, 10)
	assert.LessOrEqual(t, peak, 2, "more commands than permits at once")
	assert.Equal(t, 2, peak, "the two permits were used together")
}

func TestInspectShowsEveryKind(t *testing.T) {
	e := locktest.Setup(t, redisync.WithWatchdogTimeout(1500*time.Millisecond))
	bg := locktest.Bg()
	inspectJSON := func(name string) inspection {
		t.Helper()
		r := cli(t, e, "", "inspect", "--json", name)
		require.Equal(t, 0, r.code, r.stderr)
		var out inspection
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
		return out
	}

	// An owner id of its own makes the handle reentrant (whatever the
	// default): the second Lock nests, hold count 2.
	m := rlock.New(e.C, "i:lock", rlock.WithOwner("inspect-owner"))
	require.NoError(t, m.Lock(bg))
	require.NoError(t, m.Lock(bg))
	awaitRecords(t, e, "i:lock", 1)
	got := inspectJSON("i:lock")
	assert.Equal(t, "lock", got.Kind)
	require.Len(t, got.Holders, 1)
	assert.Equal(t, holder{Owner: m.Owner(), Count: 2, LeaseMs: got.Holders[0].LeaseMs, Info: got.Holders[0].Info}, got.Holders[0])
	assert.NotNil(t, got.Holders[0].Info, "who holds it")
	assert.Positive(t, got.LeaseMs)
	assert.Equal(t, m.Token(), got.Token)

	fh, fw := fairlock.New(e.C, "i:fair"), fairlock.New(e.C, "i:fair")
	require.NoError(t, fh.Lock(bg))
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	waitDone := make(chan error, 1)
	go func() { waitDone <- fw.Lock(ctx) }()
	locktest.Eventually(t, 5*time.Second, func() bool { return len(inspectJSON("i:fair").Queue) == 1 }, "queued")
	got = inspectJSON("i:fair")
	assert.Equal(t, "fairlock", got.Kind)
	assert.Equal(t, fw.Owner(), got.Queue[0].Owner)
	assert.Positive(t, got.Queue[0].HeartbeatMs)
	cancel()
	assert.Error(t, <-waitDone)

	r1, r2 := rwlock.New(e.C, "i:rw"), rwlock.New(e.C, "i:rw")
	require.NoError(t, r1.RLock(bg))
	require.NoError(t, r2.RLock(bg))
	got = inspectJSON("i:rw")
	assert.Equal(t, "rwlock", got.Kind)
	assert.Equal(t, "read", got.Mode)
	assert.Len(t, got.Holders, 2)
	for _, h := range got.Holders {
		assert.Equal(t, "read", h.Side)
		assert.Positive(t, h.LeaseMs)
	}

	s := semaphore.New(e.C, "i:sem", 5)
	p, err := s.Acquire(bg, 3)
	require.NoError(t, err)
	got = inspectJSON("i:sem")
	assert.Equal(t, "semaphore", got.Kind)
	assert.Equal(t, int64(5), *got.Capacity)
	assert.Equal(t, int64(2), *got.Available)
	require.Len(t, got.Holders, 1)
	assert.Equal(t, p.ID(), got.Holders[0].Owner)
	assert.Equal(t, int64(3), got.Holders[0].Count)

	r := cli(t, e, "", "inspect", "i:lock")
	require.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "holder")
	assert.Contains(t, r.stdout, m.Owner())
	assert.Equal(t, "none", inspectJSON("i:nothing").Kind)
	e.Do(t, "SET", "i:string", "x")
	r = cli(t, e, "", "inspect", "i:string")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "not a redisync lock")
}

func TestUnlockForceAsksAndTakesTheLockAway(t *testing.T) {
	e := locktest.Setup(t, redisync.WithWatchdogTimeout(300*time.Millisecond))
	m := rlock.New(e.C, "u:lock")
	require.NoError(t, m.Lock(locktest.Bg()))
	r := cli(t, e, "", "unlock", "u:lock")
	assert.Equal(t, exitUsage, r.code, "--force is required")
	r = cli(t, e, "n\n", "unlock", "--force", "u:lock")
	assert.NotEqual(t, 0, r.code)
	assert.True(t, e.Exists(t, "u:lock"), "declined, yet unlocked")
	r = cli(t, e, "y\n", "unlock", "--force", "u:lock")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, m.Owner(), "the prompt names the holder")
	assert.False(t, e.Exists(t, "u:lock"))
	select {
	case <-m.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("holder not told")
	}

	s := semaphore.New(e.C, "u:sem", 2)
	_, err := s.Acquire(locktest.Bg(), 2)
	require.NoError(t, err)
	r = cli(t, e, "", "unlock", "--force", "--yes", "u:sem")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "took back 2 permits")
	avail, err := s.Available(locktest.Bg())
	require.NoError(t, err)
	assert.Equal(t, 2, avail)
}

func TestEverySubcommandHasHelpAndOneLineErrors(t *testing.T) {
	e := locktest.Setup(t)
	for _, args := range [][]string{{"run", "--help"}, {"sem", "run", "--help"}, {"inspect", "--help"}, {"unlock", "--help"}, {"demo", "--help"}, {"--help"}} {
		r := cli(t, e, "", args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "usage: redisync", "%v", args)
	}
	for _, args := range [][]string{
		{"run", "--bogus", "x", "--", "true"},
		{"run", "x"},
		{"sem", "run", "x", "--", "true"},
		{"inspect", "--redis", "redis://127.0.0.1:1", "x"},
		{"unlock", "--force", "--redis", "nope://", "x"},
		{"run", "--wait", "soon", "x", "--", "true"},
	} {
		r := cli(t, e, "", args...)
		assert.NotEqual(t, 0, r.code, "%v", args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "%v: %q", args, r.stderr)
		assert.NotContains(t, r.stderr, "goroutine", "%v", args)
	}
}

func TestConnectionFlags(t *testing.T) {
	e := locktest.Setup(t)
	// Not a Cluster: --cluster refuses it.
	r := cli(t, e, "", "inspect", "--cluster", "x")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "not a Redis Cluster")

	// A password from --password or $REDIS_PASSWORD overrides the URL's.
	e.Do(t, "CONFIG", "SET", "requirepass", "s3cret")
	t.Cleanup(func() { e.Do(t, "CONFIG", "SET", "requirepass", "") })
	r = cli(t, e, "", "inspect", "x")
	assert.Equal(t, exitError, r.code, "no password, yet connected")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
	r = cli(t, e, "", "inspect", "--password", "s3cret", "x")
	assert.Equal(t, 0, r.code, r.stderr)
	cmd := command(e, "inspect", "x")
	cmd.Env = append(cmd.Env, "REDIS_PASSWORD=s3cret")
	assert.NoError(t, cmd.Run())
	r = cli(t, e, "", "inspect", "--redis", "redis://:s3cret@"+e.Srv.Addr(), "x")
	assert.Equal(t, 0, r.code, r.stderr)
}

// --tls-ca and rediss:// reach a TLS listener; an unknown CA is a one-line
// error.
func TestTLSFlags(t *testing.T) {
	e := locktest.Setup(t)
	srv := redistest.StartTLS(t)
	url := "rediss://" + srv.TLSAddr
	r := cli(t, e, "", "run", "--redis", url, "--tls-ca", srv.CAFile, "--fence-env", "TOKEN", "job:tls", "--", "sh", "-c", `echo "$TOKEN"`)
	require.Equal(t, 0, r.code, r.stderr)
	tok, err := strconv.ParseUint(strings.TrimSpace(r.stdout), 10, 64)
	require.NoError(t, err, r.stdout)
	assert.Positive(t, tok, "granted over TLS")
	r = cli(t, e, "", "inspect", "--redis", url, "job:tls")
	assert.NotEqual(t, 0, r.code, "a certificate from an unknown CA must be refused")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %q", r.stderr)
	assert.NotContains(t, r.stderr, "goroutine")
	assert.Contains(t, r.stderr, "certificate", "the error names the cause")
}

// --sentinel asks the Sentinels for the master: inspect sees a hold taken
// on the master directly.
func TestSentinelFlag(t *testing.T) {
	e := locktest.Setup(t)
	sn := redistest.StartSentinel(t, 2)
	c := redisync.New(sn.Master.Client(t))
	defer c.Close()
	m := rlock.New(c, "job:sentinel")
	require.NoError(t, m.Lock(context.Background()))
	defer func() { _ = m.Unlock(context.Background()) }()
	r := cli(t, e, "", "inspect", "--json", "--redis", "redis://"+sn.Addrs()[0], "--sentinel", redistest.MasterSet, "job:sentinel")
	require.Equal(t, 0, r.code, r.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, true, got["locked"], r.stdout)
}
