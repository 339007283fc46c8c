package ratelimit

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/scripts"
)

// Concurrent waiters are admitted in the order of their reservations, each
// no earlier than its admission time.
func TestWaitAdmitsInReservationOrder(t *testing.T) {
	e := setup(t)
	const interval = 80 * time.Millisecond // wide enough for a loaded machine's timers
	l := New(e.C, "w", Every(interval), 1)
	var mu sync.Mutex
	type rec struct {
		at   int64 // admission time, server µs
		done time.Time
	}
	var reserved []int64
	var admitted []rec
	l.OnReserve(func(_ string, d scripts.RateDecision) {
		mu.Lock()
		reserved = append(reserved, d.EndUs-int64(interval/time.Microsecond))
		mu.Unlock()
	})
	require.NoError(t, l.Wait(bg(), "k", 1)) // the burst: at once
	var wg sync.WaitGroup
	const waiters = 6
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var at int64
			l2 := *l
			l2.reserved = func(_ string, d scripts.RateDecision) {
				at = d.EndUs - int64(interval/time.Microsecond)
				l.reserved("k", d)
			}
			if err := l2.Wait(bg(), "k", 1); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			admitted = append(admitted, rec{at, time.Now()})
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Len(t, admitted, waiters)
	sort.Slice(reserved, func(i, j int) bool { return reserved[i] < reserved[j] })
	for i := 1; i < len(reserved); i++ {
		assert.Equal(t, int64(interval/time.Microsecond), reserved[i]-reserved[i-1], "reservations one interval apart")
	}
	for i, r := range admitted {
		if i > 0 {
			assert.Less(t, admitted[i-1].at, r.at, "returned out of reservation order")
		}
		// The server runs on this machine's clock: never before its time.
		assert.GreaterOrEqual(t, r.done.UnixMicro(), r.at, "admitted early")
	}
}

// A Wait whose admission comes after its ctx's deadline (or WithMaxWait)
// reserves nothing and says how long it would have been.
func TestWaitPastTheDeadlineReservesNothing(t *testing.T) {
	e := setup(t)
	l := New(e.C, "w", Every(time.Hour), 1)
	require.NoError(t, l.Wait(bg(), "k", 1))
	k := keys.Rate("w", "k")
	before := str(t, e, "GET", k)
	ctx, cancel := context.WithTimeout(bg(), time.Second)
	defer cancel()
	start := time.Now()
	err := l.Wait(ctx, "k", 1)
	assert.Less(t, time.Since(start), 500*time.Millisecond, "at once")
	require.ErrorIs(t, err, ErrWaitTooLong)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var de *DelayError
	require.ErrorAs(t, err, &de)
	assert.InDelta(t, float64(time.Hour), float64(de.Delay), float64(time.Second))
	assert.Equal(t, before, str(t, e, "GET", k), "nothing reserved")

	err = New(e.C, "w", Every(time.Hour), 1, WithMaxWait(time.Minute)).Wait(bg(), "k", 1)
	require.ErrorIs(t, err, ErrWaitTooLong)
	assert.False(t, errors.Is(err, context.DeadlineExceeded), "the bound was WithMaxWait")
	assert.Equal(t, before, str(t, e, "GET", k))
}

// stored is the TAT and generation in key's value.
func stored(t *testing.T, v string) (int64, string) {
	t.Helper()
	a, g, ok := strings.Cut(v, ":")
	require.True(t, ok, v)
	tat, err := strconv.ParseInt(a, 10, 64)
	require.NoError(t, err)
	return tat, g
}

// A cancelled Wait gives its reservation back: the last one all of it
// (the schedule is as before it), one with later reservations behind it
// what they leave of the burst (nothing when they fill it).
func TestCancelledWaitGivesItsReservationBack(t *testing.T) {
	e := setup(t)
	const interval = time.Hour
	us := int64(interval / time.Microsecond)
	cancelled := func(l *Limiter, key string, n int) error {
		ctx, cancel := context.WithCancel(bg())
		l2 := *l
		l2.reserved = func(string, scripts.RateDecision) { cancel() } // the reply came: cancel while it sleeps
		return l2.Wait(ctx, key, n)
	}
	k := keys.Rate("w", "last")
	l := New(e.C, "w", Every(interval), 1)
	require.NoError(t, l.Wait(bg(), "last", 1))
	before, _ := stored(t, str(t, e, "GET", k))
	require.ErrorIs(t, cancelled(l, "last", 1), context.Canceled)
	after, _ := stored(t, str(t, e, "GET", k))
	assert.Equal(t, before, after, "the last reservation is given back whole")

	// Burst 3: three reservations behind the burst; the middle one leaves.
	l3 := New(e.C, "w3", Every(interval), 3)
	_, err := l3.AllowN(bg(), "k", 3)
	require.NoError(t, err)
	var ds []scripts.RateDecision
	for range 3 {
		d, err := scripts.RateDecide(bg(), e.RC, keys.Rate("w3", "k"), &l3.limit, 1, scripts.RateReserve, -1)
		require.NoError(t, err)
		ds = append(ds, d)
	}
	credit, err := scripts.RateGiveBack(bg(), e.RC, keys.Rate("w3", "k"), &l3.limit, 1, ds[1])
	require.NoError(t, err)
	assert.Equal(t, us, credit, "one later reservation of 1 leaves 2 of the burst: the whole slot comes back")
	// Burst 1: a reservation with one behind it can give nothing back.
	l1 := New(e.C, "w1", Every(interval), 1)
	require.NoError(t, l1.Wait(bg(), "k", 1))
	ds = ds[:0]
	for range 2 {
		d, err := scripts.RateDecide(bg(), e.RC, keys.Rate("w1", "k"), &l1.limit, 1, scripts.RateReserve, -1)
		require.NoError(t, err)
		ds = append(ds, d)
	}
	credit, err = scripts.RateGiveBack(bg(), e.RC, keys.Rate("w1", "k"), &l1.limit, 1, ds[0])
	require.NoError(t, err)
	assert.Zero(t, credit, "the later admission time cannot move, and a burst of 1 has no room before it")
	// After a Reset the generation differs: nothing is credited.
	require.NoError(t, l1.Reset(bg(), "k"))
	require.NoError(t, l1.Wait(bg(), "k", 1))
	credit, err = scripts.RateGiveBack(bg(), e.RC, keys.Rate("w1", "k"), &l1.limit, 1, ds[1])
	require.NoError(t, err)
	assert.Zero(t, credit, "a reservation of a former generation")
}

// gcraConforms checks that events (admission time, cost) are a schedule
// GCRA with interval T and burst b admits: replayed in time order, none
// comes before its earliest admissible time.
func gcraConforms(t *testing.T, events [][2]int64, T, b int64) {
	t.Helper()
	sort.SliceStable(events, func(i, j int) bool { return events[i][0] < events[j][0] })
	var tat int64
	for i, ev := range events {
		at, n := ev[0], ev[1]
		tat = max(tat, at) + n*T
		if tat-b*T > at {
			t.Fatalf("event %d (%d at %d) is %d µs early: %v", i, n, at, tat-b*T-at, events)
		}
	}
}

// Random histories of reservations and give-backs, replayed: the events
// still admitted, and as many more as the limiter grants afterwards, form
// a schedule GCRA admits — a give-back never lets anything in earlier than
// the rate and burst allow. The interval is long enough that no admission
// time passes during a history.
func TestGiveBackNeverAdmitsBeyondGCRA(t *testing.T) {
	e := setup(t)
	r := rand.New(rand.NewPCG(1, 2))
	const T = int64(time.Minute / time.Microsecond)
	for round := range 60 {
		b := 1 + r.IntN(5)
		name := "gb" + strconv.Itoa(round)
		l := New(e.C, name, Every(time.Minute), b)
		k := keys.Rate(name, "k")
		type res struct {
			d scripts.RateDecision
			n int64
		}
		var live []res
		reserve := func(n int64) {
			d, err := scripts.RateDecide(bg(), e.RC, k, &l.limit, n, scripts.RateReserve, -1)
			require.NoError(t, err)
			live = append(live, res{d, n})
		}
		for range 4 + r.IntN(10) {
			if len(live) > 0 && r.IntN(3) == 0 {
				i := r.IntN(len(live))
				credit, err := scripts.RateGiveBack(bg(), e.RC, k, &l.limit, live[i].n, live[i].d)
				require.NoError(t, err)
				if credit > 0 {
					live = append(live[:i], live[i+1:]...)
				}
				continue
			}
			reserve(int64(1 + r.IntN(b)))
		}
		for range b + 2 { // what the limiter grants after the history
			reserve(1)
		}
		events := make([][2]int64, len(live))
		for i, x := range live {
			now := x.d.EndUs - x.d.ResetUs // the decision's server time
			events[i] = [2]int64{now + x.d.RetryUs, x.n}
		}
		gcraConforms(t, events, T, int64(b))
	}
}
