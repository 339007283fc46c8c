package main

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// TestRunStopsAtOnceOnAPermanentError: with the default --wait (forever),
// an error no retry can change — the name is a user's string key, or sem
// run asks for more permits than a semaphore can have — ends the command
// at once with exit 1 and a message that says what is wrong, instead of a
// silent retry for ever.
func TestRunStopsAtOnceOnAPermanentError(t *testing.T) {
	e := locktest.Setup(t)
	redistest.Do(t, e.RC, "SET", "job:data", "a user's value")
	cases := []struct {
		what string
		args []string
		want string
	}{
		{"a key of another kind", []string{"run", "job:data", "--", "true"}, `"job:data" holds a string`},
		{"--count above MaxPermits", []string{"sem", "run", "--permits", "1", "--count", strconv.Itoa(semaphore.MaxPermits + 1), "sem:big", "--", "true"}, "outside 1..MaxPermits"},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			_, result := background(t, e, c.args...)
			r := result(10 * time.Second)
			assert.Equal(t, exitError, r.code, r.stderr)
			assert.Contains(t, r.stderr, c.want)
		})
	}
}

// TestRunRetriesARedisThatIsDownAtStart: as its help says, run retries
// Redis errors that pass by themselves (here: connection refused, Redis
// not started yet) until --wait passes — also before the first contact.
// A Redis that comes up within --wait is used; one that does not is exit 1
// after --wait, saying so; --wait 0 tries once.
func TestRunRetriesARedisThatIsDownAtStart(t *testing.T) {
	e := locktest.Setup(t)
	e.Srv.Kill()
	marker := filepath.Join(t.TempDir(), "ran")
	_, result := background(t, e, "run", "--wait", "1m", "job:late", "--", "touch", marker)
	time.Sleep(time.Second)
	e.Srv.Restart()
	r := result(30 * time.Second)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, marker)
	assert.Contains(t, r.stderr, "retrying", "the first retry is said once")

	e.Srv.Kill()
	start := time.Now()
	_, result = background(t, e, "run", "--wait", "1500ms", "job:late", "--", "true")
	r = result(30 * time.Second)
	assert.Equal(t, exitError, r.code, r.stderr)
	assert.GreaterOrEqual(t, time.Since(start), 1400*time.Millisecond, "retried within --wait")
	assert.Contains(t, r.stderr, "--wait 1.5s", r.stderr)

	start = time.Now()
	_, result = background(t, e, "run", "--wait", "0", "job:late", "--", "true")
	r = result(30 * time.Second)
	assert.Equal(t, exitError, r.code, r.stderr)
	assert.Less(t, time.Since(start), 5*time.Second, "--wait 0 tries once")
}
