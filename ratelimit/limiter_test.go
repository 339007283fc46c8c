package ratelimit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
)

// Every bad argument is an *ArgError matching its sentinel (or
// ErrInvalidName), from every method, and nothing reaches the server.
func TestBadInputIsRefusedBeforeAnyIO(t *testing.T) {
	e := setup(t)
	ok := New(e.C, "api", PerSecond(10), 5)
	cases := []struct {
		l    *Limiter
		key  string
		n    int
		want error
	}{
		{New(e.C, "api", PerSecond(0), 5), "k", 1, ErrInvalidRate},
		{New(e.C, "api", PerSecond(-3), 5), "k", 1, ErrInvalidRate},
		{New(e.C, "api", Rate{Limit: 1, Period: -time.Second}, 5), "k", 1, ErrInvalidRate},
		{New(e.C, "api", PerSecond(2_000_000), 5), "k", 1, ErrInvalidRate}, // finer than a µs
		{New(e.C, "api", PerSecond(10), 0), "k", 1, ErrInvalidBurst},
		{New(e.C, "api", PerSecond(10), -1), "k", 1, ErrInvalidBurst},
		{New(e.C, "api", PerHour(1), 1_000_000), "k", 1, ErrInvalidBurst}, // past MaxHorizon
		{New(e.C, "", PerSecond(10), 5), "k", 1, redisync.ErrInvalidName},
		{ok, "", 1, ErrInvalidKey},
		{ok, strings.Repeat("k", MaxKeyLength+1), 1, ErrInvalidKey},
		{ok, "k", 0, ErrInvalidN},
		{ok, "k", -2, ErrInvalidN},
	}
	for _, c := range cases {
		calls := map[string]func() error{
			"Allow":       func() error { _, err := c.l.Allow(bg(), c.key); return err },
			"AllowN":      func() error { _, err := c.l.AllowN(bg(), c.key, c.n); return err },
			"AllowAtMost": func() error { _, err := c.l.AllowAtMost(bg(), c.key, c.n); return err },
			"Wait":        func() error { return c.l.Wait(bg(), c.key, c.n) },
			"Reset":       func() error { return c.l.Reset(bg(), c.key) },
		}
		for name, call := range calls {
			before := redistest.ScriptCalls(t, e.RC)
			err := call()
			if (name == "Allow" || name == "Reset") && errors.Is(c.want, ErrInvalidN) {
				assert.NoError(t, err, "%s takes no n", name)
				continue
			}
			require.ErrorIs(t, err, c.want, "%s %+v", name, c)
			assert.Equal(t, before, redistest.ScriptCalls(t, e.RC), "%s sent a script", name)
			if c.want != redisync.ErrInvalidName {
				var ae *ArgError
				require.ErrorAs(t, err, &ae, name)
				assert.Contains(t, err.Error(), `ratelimit "api"`)
			}
		}
	}
	// n above the burst: never admissible for AllowN and Wait; AllowAtMost
	// takes it (and admits at most a burst).
	_, err := ok.AllowN(bg(), "k", 6)
	require.ErrorIs(t, err, ErrInvalidN)
	require.ErrorIs(t, ok.Wait(bg(), "k", 6), ErrInvalidN)
	res, err := ok.AllowAtMost(bg(), "k2", 100)
	require.NoError(t, err)
	assert.Equal(t, 5, res.Allowed)
}

// A key gets its burst at once, then one event per interval; each
// Result says what is left and when to retry.
func TestAllowAdmitsTheBurstThenTheRate(t *testing.T) {
	e := setup(t)
	l := New(e.C, "api", Every(time.Hour), 3) // nothing comes back during the test
	for i := range 3 {
		res, err := l.Allow(bg(), "user:1")
		require.NoError(t, err)
		assert.Equal(t, 1, res.Allowed, i)
		assert.Equal(t, 2-i, res.Remaining, i)
		assert.Zero(t, res.RetryAfter, i)
		assert.InDelta(t, float64(time.Duration(i+1)*time.Hour), float64(res.ResetAfter), float64(time.Second))
	}
	k := keys.Rate("api", "user:1")
	before := str(t, e, "GET", k)
	res, err := l.Allow(bg(), "user:1")
	require.NoError(t, err)
	assert.Equal(t, 0, res.Allowed)
	assert.Equal(t, 0, res.Remaining)
	assert.InDelta(t, float64(time.Hour), float64(res.RetryAfter), float64(time.Second))
	assert.Equal(t, before, str(t, e, "GET", k), "a denial writes nothing")
	// Another key, and another limiter on the same key, are apart.
	res, err = l.Allow(bg(), "user:2")
	require.NoError(t, err)
	assert.Equal(t, 1, res.Allowed)
	res, err = New(e.C, "login", Every(time.Hour), 3).Allow(bg(), "user:1")
	require.NoError(t, err)
	assert.Equal(t, 1, res.Allowed)
}

func TestAllowNIsAllOrNothingAndAllowAtMostTakesWhatIsLeft(t *testing.T) {
	e := setup(t)
	l := New(e.C, "api", Every(time.Hour), 5)
	res, err := l.AllowN(bg(), "k", 3)
	require.NoError(t, err)
	assert.Equal(t, Result{Allowed: 3, Remaining: 2, ResetAfter: res.ResetAfter}, res)
	res, err = l.AllowN(bg(), "k", 3)
	require.NoError(t, err)
	assert.Equal(t, 0, res.Allowed)
	assert.Equal(t, 2, res.Remaining)
	assert.InDelta(t, float64(time.Hour), float64(res.RetryAfter), float64(time.Second), "one more interval")
	res, err = l.AllowAtMost(bg(), "k", 3)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Allowed)
	assert.Equal(t, 0, res.Remaining)
	res, err = l.AllowAtMost(bg(), "k", 3)
	require.NoError(t, err)
	assert.Equal(t, 0, res.Allowed)
	assert.InDelta(t, float64(time.Hour), float64(res.RetryAfter), float64(time.Second))
}

// An identity's key expires when its schedule is back to a full burst:
// its PTTL is the ResetAfter of the last admission.
func TestIdleKeysExpire(t *testing.T) {
	e := setup(t)
	l := New(e.C, "api", PerSecond(20), 4) // 50 ms per event
	var res Result
	for range 4 {
		var err error
		res, err = l.Allow(bg(), "idle")
		require.NoError(t, err)
	}
	k := keys.Rate("api", "idle")
	pttl := e.PTTL(t, k)
	assert.InDelta(t, res.ResetAfter.Milliseconds(), pttl, 5, "the key lives to its TAT")
	assert.LessOrEqual(t, pttl, int64(200))
	eventually(t, 5*time.Second, func() bool { return !e.Exists(t, k) }, "the idle key expires")
	res, err := l.AllowN(bg(), "idle", 4)
	require.NoError(t, err)
	assert.Equal(t, 4, res.Allowed, "a full burst again")
}

func TestResetRestoresTheBurst(t *testing.T) {
	e := setup(t)
	l := New(e.C, "api", Every(time.Hour), 2)
	_, err := l.AllowN(bg(), "k", 2)
	require.NoError(t, err)
	require.NoError(t, l.Reset(bg(), "k"))
	assert.False(t, e.Exists(t, keys.Rate("api", "k")))
	res, err := l.AllowN(bg(), "k", 2)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Allowed)
	require.NoError(t, l.Reset(bg(), "absent"), "resetting a key without history is no error")
}

// A user's data under a limiter's key — any type, a string of another
// shape, one of ours but without expiry — is refused with the typed
// wrong-kind error by every method, and left byte for byte as it was.
func TestForeignDataIsRefusedNotOverwritten(t *testing.T) {
	e := setup(t)
	l := New(e.C, "api", PerSecond(10), 5)
	k := keys.Rate("api", "victim")
	plants := [][]string{
		{"SET", k, "v"},
		{"SET", k, "1764000000000000:1764000000000000"}, // our shape, no expiry
		{"SET", k, "12:34x", "PX", "600000"},
		{"RPUSH", k, "a"},
		{"SADD", k, "a"},
		{"ZADD", k, "1", "a"},
		{"HSET", k, "tat", "1"},
		{"XADD", k, "*", "f", "v"},
	}
	for _, plant := range plants {
		e.Do(t, "DEL", k)
		e.Do(t, plant...)
		dump := str(t, e, "DUMP", k)
		pttl := e.PTTL(t, k)
		for name, call := range map[string]func() error{
			"Allow":       func() error { _, err := l.Allow(bg(), "victim"); return err },
			"AllowAtMost": func() error { _, err := l.AllowAtMost(bg(), "victim", 2); return err },
			"Wait":        func() error { return l.Wait(bg(), "victim", 1) },
			"Reset":       func() error { return l.Reset(bg(), "victim") },
		} {
			err := call()
			require.ErrorIs(t, err, redisync.ErrWrongKind, "%s on %v", name, plant)
			var wk *redisync.WrongKindError
			require.ErrorAs(t, err, &wk)
			assert.Equal(t, k, wk.Key)
			assert.Contains(t, err.Error(), `ratelimit "api"`)
			assert.Equal(t, dump, str(t, e, "DUMP", k), "%s changed %v", name, plant)
			assert.InDelta(t, pttl, e.PTTL(t, k), 1000, "%s changed the expiry of %v", name, plant)
		}
	}
}

// After Close every method returns ErrClosed; a nil ctx panics.
func TestClosedClientAndNilContext(t *testing.T) {
	e := setup(t)
	c := e.Client(t)
	l := New(c, "api", PerSecond(10), 5)
	assert.Panics(t, func() { _, _ = l.Allow(nil, "k") }) //nolint:staticcheck // the panic is the point
	c.Close()
	_, err := l.Allow(bg(), "k")
	assert.ErrorIs(t, err, redisync.ErrClosed)
	assert.ErrorIs(t, l.Wait(bg(), "k", 1), redisync.ErrClosed)
	ctx, cancel := context.WithCancel(bg())
	cancel()
	_, err = New(e.C, "api", PerSecond(10), 5).Allow(ctx, "k")
	assert.Equal(t, context.Canceled, err, "unwrapped")
}

func TestRateInterval(t *testing.T) {
	assert.Equal(t, time.Millisecond, PerSecond(1000).Interval())
	assert.Equal(t, 333334*time.Microsecond, PerSecond(3).Interval(), "rounded up: never more than the rate")
	assert.Equal(t, time.Minute, PerHour(60).Interval())
	assert.Equal(t, time.Duration(0), PerSecond(0).Interval())
}

// str is a raw command's string reply ("" for nil).
func str(t *testing.T, e *locktest.Env, args ...string) string {
	t.Helper()
	v, _ := e.Do(t, args...).ToString()
	return v
}
