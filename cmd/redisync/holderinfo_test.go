package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/locktest"
)

// startRun starts `redisync run --lease 1500ms [flags] NAME -- sleep 60` and
// returns it once it holds the lock and its holder record is written (with
// the first renewal, a third of the lease after the grant); it is stopped
// (SIGTERM, forwarded to sleep) at cleanup.
func startRun(t *testing.T, e *locktest.Env, name string, flags ...string) *exec.Cmd {
	t.Helper()
	args := append(append([]string{"run", "--lease", "1500ms"}, flags...), name, "--", "sleep", "60")
	cmd := command(e, args...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	locktest.Eventually(t, 20*time.Second, func() bool { return e.Exists(t, name) }, "run took the lock")
	locktest.AwaitAnyRecord(t, e.RC, name, 20*time.Second)
	return cmd
}

// awaitRecords waits until inspect --json shows a record for each of the
// holders of name (holds record themselves with their first renewal).
func awaitRecords(t *testing.T, e *locktest.Env, name string, holders int) {
	t.Helper()
	locktest.Eventually(t, 20*time.Second, func() bool {
		r := cli(t, e, "", "inspect", "--json", name)
		var got inspection
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || len(got.Holders) != holders {
			return false
		}
		for _, h := range got.Holders {
			if h.Info == nil {
				return false
			}
		}
		return true
	}, "the holders of "+name+" show their records")
}

// The command records who holds a lock (issue 14: "operators cannot tell
// whose lock it is"): inspect, its JSON and unlock --force show host, pid,
// program, age and --label.
func TestInspectAndUnlockShowWhoHoldsTheLock(t *testing.T) {
	e := locktest.Setup(t)
	run := startRun(t, e, "who:nightly", "--label", "nightly-report #42")
	host, _ := os.Hostname()

	r := cli(t, e, "", "inspect", "--json", "who:nightly")
	require.Equal(t, 0, r.code, r.stderr)
	var got inspection
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	require.Len(t, got.Holders, 1)
	info := got.Holders[0].Info
	require.NotNil(t, info, "no holder info in %s", r.stdout)
	assert.Equal(t, host, info.Host)
	assert.Equal(t, run.Process.Pid, info.PID)
	assert.Equal(t, "redisync", info.Program)
	assert.Equal(t, "nightly-report #42", info.Label)
	started, err := time.Parse(time.RFC3339, info.Started)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), started, time.Minute)
	assert.Less(t, info.AgeMs, int64(60_000))

	r = cli(t, e, "", "inspect", "who:nightly")
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"host", "pid", "program", "started", "label", "nightly-report #42", strconv.Itoa(run.Process.Pid), " ago"} {
		assert.Contains(t, r.stdout, want)
	}

	r = cli(t, e, "n\n", "unlock", "--force", "who:nightly")
	assert.NotEqual(t, 0, r.code)
	for _, want := range []string{"host " + host, "pid " + strconv.Itoa(run.Process.Pid), "program redisync", "label nightly-report #42", "started "} {
		assert.Contains(t, r.stderr, want, "the confirmation says who holds it")
	}
	side, _ := keys.Derived(keys.HolderInfoPrefix, "who:nightly")
	require.True(t, e.Exists(t, side))
	r = cli(t, e, "", "unlock", "--force", "--yes", "who:nightly")
	require.Equal(t, 0, r.code, r.stderr)
	assert.False(t, e.Exists(t, side), "unlock --force left the holder's record")
}

// A label is anyone's choice, and so is what others write under the side
// key: neither reaches the terminal raw.
func TestHostileHolderInfoIsEscaped(t *testing.T) {
	e := locktest.Setup(t)
	evil := "\r\x1b[2K nothing is held; safe\u202e"
	startRun(t, e, "who:evil", "--label", evil)

	check := func(what, out string) {
		t.Helper()
		for _, raw := range []string{"\x1b", "\r", "\u202e"} {
			assert.NotContains(t, out, raw, "%s printed a raw control character: %q", what, out)
		}
	}
	r := cli(t, e, "", "inspect", "who:evil")
	require.Equal(t, 0, r.code, r.stderr)
	check("inspect", r.stdout)
	assert.Contains(t, r.stdout, `\r\x1b[2K nothing is held; safe\u202e`)
	r = cli(t, e, "n\n", "unlock", "--force", "who:evil")
	check("unlock's prompt", r.stdout+r.stderr)
	r = cli(t, e, "", "inspect", "--json", "who:evil")
	require.Equal(t, 0, r.code, r.stderr)
	check("inspect --json", r.stdout)
	var got inspection
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got.Holders, 1)
	require.NotNil(t, got.Holders[0].Info)
	assert.Equal(t, evil, got.Holders[0].Info.Label, "JSON keeps the value, escaped")

	// A record written by hand, with escapes in every field.
	e.Do(t, "HSET", "who:raw", "me:1", "1")
	e.Do(t, "PEXPIRE", "who:raw", "60000")
	side, _ := keys.Derived(keys.HolderInfoPrefix, "who:raw")
	e.Do(t, "HSET", side, "me:1", `1|1700000000000|{"h":"\u001b[31mhost","p":7,"c":"prog\r","l":"\u0007bell"}`)
	e.Do(t, "PEXPIRE", side, "60000")
	r = cli(t, e, "", "inspect", "who:raw")
	require.Equal(t, 0, r.code, r.stderr)
	check("inspect of a forged record", r.stdout)
	assert.NotContains(t, r.stdout, "\x07")
	assert.Contains(t, r.stdout, `\x1b[31mhost`)
}

func TestSemRunRecordsItsLabel(t *testing.T) {
	e := locktest.Setup(t)
	cmd := command(e, "sem", "run", "--permits", "2", "--lease", "1500ms", "--label", "transcode worker", "who:pool", "--", "sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	var got inspection
	locktest.Eventually(t, 20*time.Second, func() bool {
		r := cli(t, e, "", "inspect", "--json", "who:pool")
		got = inspection{}
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &got) == nil && len(got.Holders) == 1 && got.Holders[0].Info != nil
	}, "sem run holds a permit, with its record")
	require.NotNil(t, got.Holders[0].Info)
	assert.Equal(t, "transcode worker", got.Holders[0].Info.Label)
	assert.Equal(t, cmd.Process.Pid, got.Holders[0].Info.PID)
}

func TestRunRefusesAnOverlongLabel(t *testing.T) {
	e := locktest.Setup(t)
	r := cli(t, e, "", "run", "--label", strings.Repeat("x", 129), "who:long", "--", "true")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "128")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
	assert.False(t, e.Exists(t, "who:long"))
}

// --verbose names the holder's host, pid and label while waiting.
func TestVerboseWaitSaysWhoHolds(t *testing.T) {
	e := locktest.Setup(t)
	run := startRun(t, e, "who:busy", "--label", "the first one")
	r := cli(t, e, "", "run", "--verbose", "--wait", "2500ms", "who:busy", "--", "true")
	assert.Equal(t, exitBusy, r.code, r.stderr)
	assert.Contains(t, r.stderr, "pid "+strconv.Itoa(run.Process.Pid))
	assert.Contains(t, r.stderr, "label the first one")
}
