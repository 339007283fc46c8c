package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// A step of the server's clock, forward or back, admits at most the burst
// beyond the rate: from a saturated schedule, a window around a step gets
// at most burst + window/T + 1 events (without a step: window/T + 1). A
// step back admits nothing until the clock has caught up with the
// schedule; stepping it forward again gives the burst once more, no more.
func TestClockStepsAdmitAtMostTheBurstBeyondTheRate(t *testing.T) {
	srv, clock := redistest.StartShifted(t, 0)
	c := redisync.New(srv.Client(t))
	t.Cleanup(func() { c.Close() })
	const burst = 20
	l := New(c, "clock", PerSecond(100), burst) // T = 10 ms
	T := l.rate.Interval()
	saturate := func() {
		t.Helper()
		for {
			res, err := l.AllowAtMost(bg(), "k", burst)
			require.NoError(t, err)
			if res.Allowed == 0 {
				return
			}
		}
	}
	// window steps the clock by d and asks for as many events as it can
	// for 300 ms; it returns the events admitted and the window's length
	// by the test's (unstepped) clock.
	window := func(d time.Duration) (int, time.Duration) {
		t.Helper()
		saturate()
		start := time.Now()
		clock.Step(d)
		admitted := 0
		for time.Since(start) < 300*time.Millisecond {
			res, err := l.Allow(bg(), "k")
			require.NoError(t, err)
			admitted += res.Allowed
		}
		return admitted, time.Since(start)
	}
	bound := func(w time.Duration) int { return burst + int(w/T) + 1 }

	n, w := window(0)
	assert.LessOrEqual(t, n, int(w/T)+1, "no step: the rate alone")
	n, w = window(time.Hour)
	t.Logf("forward 1 h: %d admitted in %v (bound %d)", n, w, bound(w))
	assert.LessOrEqual(t, n, bound(w), "forward")
	assert.GreaterOrEqual(t, n, burst, "the step gives the burst back: the window is not vacuous")
	n, w = window(-2 * time.Hour)
	t.Logf("back 2 h: %d admitted in %v", n, w)
	assert.Zero(t, n, "back: the schedule is ahead of the clock")
	n, w = window(time.Hour)
	t.Logf("forward 1 h, to a schedule 1 h ahead of the clock: %d admitted in %v", n, w)
	assert.Zero(t, n, "the clock is back where the schedule was written: still ahead of it")
	n, w = window(2 * time.Hour)
	t.Logf("forward 2 h: %d admitted in %v (bound %d)", n, w, bound(w))
	assert.LessOrEqual(t, n, bound(w), "forward past the schedule")
}
