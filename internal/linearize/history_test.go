package linearize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
)

// The budget: each kind records histories for defaultSeconds in make test
// (the kinds run at once, each on its own server); LINEARIZE_SECONDS sets
// a longer one (CI), LINEARIZE_SEED replays a run's choices (the stalls'
// timing is the server's and the scheduler's, so a replay is a search of
// the same shape, not the same history).
const (
	defaultSeconds = 3
	secondsEnv     = "LINEARIZE_SECONDS"
	seedEnv        = "LINEARIZE_SEED"

	fixedLease    = 600 * time.Millisecond // slots 1 and 2
	watchdogLease = time.Second            // the Clients' watchdog timeout: slots 0, 3, 4
	pollEvery     = 5 * time.Millisecond   // how often a holder looks at Done
	checkTimeout  = time.Minute            // porcupine's budget for one history
)

func budget() time.Duration {
	if v, err := strconv.Atoi(os.Getenv(secondsEnv)); err == nil && v > 0 {
		return time.Duration(v) * time.Second
	}
	return defaultSeconds * time.Second
}

func seed() uint64 {
	if v, err := strconv.ParseUint(os.Getenv(seedEnv), 10, 64); err == nil {
		return v
	}
	return uint64(time.Now().UnixNano())
}

// history records operations with their call and return times.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	stats map[string]int
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(client int, in input, call int64, out output, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.stats[opNames[in.op]+" "+outNames[out]]++
}

// describe lists the operations in call order, times in ms.
func (h *history) describe() string {
	ops := slices.Clone(h.ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "%8.1f %8.1f  w%d %s\n", float64(op.Call)/1e6, float64(op.Return)/1e6, op.ClientId,
			mutexModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

func (h *history) count(what string) {
	h.mu.Lock()
	h.stats[what]++
	h.mu.Unlock()
}

// slot is one handle of the history. A gated slot is a default handle (a
// sync.Mutex); the others share the owner id "job" and nest.
type slot struct {
	idx   int
	owner int8
	gated bool
	l     redisync.Locker
}

func (s *slot) in(op opKind) input { return input{op: op, slot: s.idx, owner: s.owner, gated: s.gated} }

// worker is one goroutine's calls on one slot.
type worker struct {
	id   int
	h    *history
	rng  *rand.Rand
	end  time.Time
	long int // holds in ten that last 300-900 ms, past a fixed lease for some
}

// acquire makes one Lock (with a deadline) or TryLock and records it; it
// returns whether it was granted and when it was called.
func (w *worker) acquire(s *slot) (bool, int64) {
	op := opTryLock
	if w.rng.IntN(3) > 0 {
		op = opLock
	}
	call := w.h.now()
	var ok bool
	var err error
	if op == opLock {
		ctx, cancel := context.WithTimeout(bg, time.Duration(200+w.rng.IntN(1300))*time.Millisecond)
		err = s.l.Lock(ctx)
		cancel()
		ok = err == nil
	} else {
		ok, err = s.l.TryLock(bg)
		ok = ok && err == nil
	}
	out := outFailed
	if ok {
		out = outOK
	}
	w.h.add(w.id, s.in(op), call, out, w.h.now())
	return ok, call
}

// unlock makes one Unlock and records it; lastOpen is when the holder last
// saw its Done open (0: it holds nothing it knows of). An ErrLockLost whose
// Done the holder never saw close records the loss as well: it happened
// after lastOpen and before the Unlock returned.
func (w *worker) unlock(s *slot, lastOpen int64) output {
	call := w.h.now()
	err := s.l.Unlock(bg)
	ret := w.h.now()
	out := outOther
	switch {
	case err == nil:
		out = outOK
	case errors.Is(err, redisync.ErrLockLost):
		out = outLockLost
	case errors.Is(err, redisync.ErrNotHeld):
		out = outNotHeld
	}
	if out == outLockLost && lastOpen > 0 {
		w.h.add(w.id, s.in(opLost), lastOpen, outOK, ret)
	}
	w.h.add(w.id, s.in(opUnlock), call, out, ret)
	return out
}

// hold keeps the hold granted by a call at since for a drawn time
// (sometimes past a fixed lease), looking at Done every pollEvery. It
// returns when the holder last saw Done open, or 0 after it recorded the
// loss (Done closed: only an Unlock, which this goroutine has not made, or
// a loss closes it).
func (w *worker) hold(s *slot, since int64) int64 {
	d := time.Duration(10+w.rng.IntN(140)) * time.Millisecond
	if w.rng.IntN(10) < w.long {
		d = time.Duration(300+w.rng.IntN(600)) * time.Millisecond
	}
	done := s.l.Done()
	until := time.Now().Add(d)
	lastOpen := since
	for {
		at := w.h.now()
		select {
		case <-done:
			w.h.add(w.id, s.in(opLost), lastOpen, outOK, w.h.now())
			return 0
		default:
			lastOpen = at
		}
		if !time.Now().Before(until) {
			return lastOpen
		}
		time.Sleep(pollEvery)
	}
}

// run makes rounds on s until the budget ends: acquire, hold, unlock;
// nested acquires on a slot that nests; stray Unlocks on a slot this
// worker alone uses.
func (w *worker) run(s *slot, alone bool) {
	for time.Now().Before(w.end) {
		switch r := w.rng.IntN(10); {
		case r == 0 && alone:
			w.h.count("stray Unlock")
			w.unlock(s, 0)
		case r < 3 && !s.gated:
			ok, call := w.acquire(s)
			if !ok {
				continue
			}
			lastOpen := w.hold(s, call)
			n := 1
			outer := s.l.Done()
			if ok, call := w.acquire(s); lastOpen > 0 && ok {
				if s.l.Done() != outer {
					// The outer hold was lost after the holder last saw
					// Done open (also while this Lock was in flight): the
					// Lock began a new hold past it, and the outer one's
					// Unlock, after the new hold's, reports the loss.
					w.h.add(w.id, s.in(opLost), lastOpen, outOK, w.h.now())
					w.h.count("lost before a nested Lock")
				} else {
					w.h.count("nested")
				}
				n++
				lastOpen = w.hold(s, call)
			} else if ok {
				w.h.count("locked past a recorded loss")
				lastOpen = w.hold(s, call) // a new hold past the lost one, whose Unlock is still owed
				n++
			}
			for range n {
				if w.unlock(s, lastOpen) != outOK {
					lastOpen = 0
				}
			}
		default:
			if ok, call := w.acquire(s); ok {
				w.unlock(s, w.hold(s, call))
			}
		}
		time.Sleep(time.Duration(w.rng.IntN(20)) * time.Millisecond)
	}
}

// strayRounds makes rounds on fresh handles (slot 4, default or "job"):
// an Unlock sent while the handle's first Lock is in flight, then the
// Lock's hold, if granted, held and unlocked.
func (w *worker) strayRounds(s *slot, fresh func(shared bool) redisync.Locker, rc rueidis.Client) {
	for time.Now().Before(w.end) {
		if w.rng.IntN(2) == 0 {
			// A short stall of its own, so that the Unlock meets the Lock
			// in flight.
			w.h.count("CLIENT PAUSE WRITE before a stray")
			ctx, cancel := context.WithTimeout(bg, 2*time.Second)
			_ = rc.Do(ctx, rc.B().ClientPause().Timeout(150).Write().Build()).Error()
			cancel()
		}
		shared := w.rng.IntN(2) == 0
		s.l, s.owner, s.gated = fresh(shared), 2, !shared
		if shared {
			s.owner = 1
		}
		type grant struct {
			ok   bool
			call int64
		}
		locked := make(chan grant, 1)
		rng := rand.New(rand.NewPCG(w.rng.Uint64(), 0)) // the Lock's own draws
		go func() {
			lw := &worker{id: w.id + 1, h: w.h, rng: rng, end: w.end, long: w.long}
			ok, call := lw.acquire(s)
			locked <- grant{ok, call}
		}()
		round := w.h.now()
		time.Sleep(time.Duration(w.rng.IntN(100)) * time.Millisecond)
		w.h.count("stray Unlock while locking")
		// Once the Lock has returned this Unlock is no stray: it releases
		// the hold (nil), or reports its loss. Whatever it said, a hold
		// whose Done is open is the handle's, to hold and unlock.
		w.unlock(s, round)
		if g := <-locked; g.ok {
			select {
			case <-s.l.Done():
			default:
				w.unlock(s, w.hold(s, g.call))
			}
		}
		time.Sleep(time.Duration(w.rng.IntN(20)) * time.Millisecond)
	}
}

// stalls stops the server's writes (CLIENT PAUSE WRITE) or the whole server
// (SIGSTOP) for a few hundred ms to a bit past the watchdog lease, between
// and during the workers' calls, until end.
func stalls(h *history, srv *redistest.Server, rc rueidis.Client, rng *rand.Rand, end time.Time) {
	for time.Now().Before(end) {
		time.Sleep(time.Duration(400+rng.IntN(1000)) * time.Millisecond)
		d := time.Duration(200+rng.IntN(1000)) * time.Millisecond
		if rng.IntN(2) == 0 {
			h.count("CLIENT PAUSE WRITE")
			ctx, cancel := context.WithTimeout(bg, 2*time.Second)
			_ = rc.Do(ctx, rc.B().ClientPause().Timeout(d.Milliseconds()).Write().Build()).Error()
			cancel()
			time.Sleep(d)
		} else {
			h.count("SIGSTOP")
			srv.Pause()
			time.Sleep(d)
			srv.Resume()
		}
	}
}

// TestHistoriesAreLinearizable records concurrent histories of Lock,
// TryLock, Unlock and losses on every exclusive lock kind — two goroutines
// sharing a default handle (watchdog lease), a default handle with a fixed
// lease on another Client, two handles on the owner id "job" (one fixed,
// one watchdog, on two Clients) that nest into each other's holds, and
// fresh handles whose first Lock meets a stray Unlock — while the server
// stalls, and checks with porcupine that some order of the calls, each
// taking effect between its call and return, satisfies the mutex model
// (model_test.go).
func TestHistoriesAreLinearizable(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			sd := seed()
			t.Logf("%s=%d", seedEnv, sd)
			rng := rand.New(rand.NewPCG(sd, 22))
			e := locktest.Setup(t, redisync.WithWatchdogTimeout(watchdogLease))
			c2 := e.Client(t, redisync.WithWatchdogTimeout(watchdogLease))
			name := "linearize:" + k.name
			slots := []*slot{
				{idx: 0, owner: 0, gated: true, l: k.new(e.C, name, "", 0)},
				{idx: 1, owner: 3, gated: true, l: k.new(c2, name, "", fixedLease)},
				{idx: 2, owner: 1, l: k.new(e.C, name, "job", fixedLease)},
				{idx: 3, owner: 1, l: k.new(c2, name, "job", 0)},
				{idx: 4},
			}
			fresh := func(shared bool) redisync.Locker {
				if shared {
					return k.new(e.C, name, "job", fixedLease)
				}
				return k.new(e.C, name, "", 0)
			}
			h := &history{start: time.Now(), stats: map[string]int{}}
			end := time.Now().Add(budget())
			var wg sync.WaitGroup
			newWorker := func(id, long int) *worker {
				return &worker{id: id, h: h, rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(id))), end: end, long: long}
			}
			// The fixed-lease "job" handle outlives its lease most often,
			// while the other "job" handle nests into its hold and renews.
			for id, spec := range []struct {
				s     *slot
				alone bool
				long  int
			}{{slots[0], false, 3}, {slots[0], false, 3}, {slots[1], true, 3}, {slots[2], true, 6}, {slots[3], true, 3}} {
				w := newWorker(id, spec.long)
				wg.Go(func() { w.run(spec.s, spec.alone) })
			}
			w := newWorker(5, 3)
			wg.Go(func() { w.strayRounds(slots[4], fresh, e.RC) })
			nemesis := rand.New(rand.NewPCG(rng.Uint64(), 99))
			wg.Go(func() { stalls(h, e.Srv, e.RC, nemesis, end) })
			wg.Wait()
			e.Srv.Resume()

			t.Logf("%d operations: %v", len(h.ops), h.stats)
			require.NotZero(t, h.stats["Lock ok"]+h.stats["TryLock ok"], "no grant: the history checks nothing")
			res, info := porcupine.CheckOperationsVerbose(mutexModel, h.ops, checkTimeout)
			switch res {
			case porcupine.Ok:
			case porcupine.Unknown:
				t.Fatalf("porcupine could not decide within %v (%d operations)", checkTimeout, len(h.ops))
			default:
				f, err := os.CreateTemp("", "linearize-"+k.name+"-*.html")
				require.NoError(t, err)
				require.NoError(t, porcupine.Visualize(mutexModel, info, f))
				require.NoError(t, f.Close())
				t.Fatalf("the history is not linearizable (%s=%d): see %s\n%s", seedEnv, sd, f.Name(), h.describe())
			}
		})
	}
}
