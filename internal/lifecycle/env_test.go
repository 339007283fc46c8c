package lifecycle

// The servers, the Clients and handles of one run, and the renewal
// recorder.

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"pgregory.net/rapid"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

type env struct {
	stats map[string]int // what the runs exercised, for the log
	srv   []*redistest.Server
	raw   []rueidis.Client // assertions and faults, one per server
	lib   []rueidis.Client // lib[0]: the main Client; lib[1+i]: redlock's node i
}

func newEnv(t *testing.T) *env {
	e := &env{srv: redistest.StartN(t, 3), stats: map[string]int{}}
	for _, s := range e.srv {
		e.raw = append(e.raw, s.Client(t))
	}
	e.lib = append(e.lib, e.srv[0].Client(t))
	for _, s := range e.srv {
		e.lib = append(e.lib, s.Client(t))
	}
	return e
}

// event is one observed renewal.
type event struct {
	at     time.Time
	layout string
	count  int
}

// watchEvent is one observed renewal round (Renewed, RenewFailed) or loss
// (Lost), for the deadline rule (lapsed).
type watchEvent struct {
	at     time.Time
	kind   redisync.EventKind
	layout string    // Renewed, RenewFailed: the layout renewed
	name   string    // Lost: the lock's name
	sent   time.Time // Renewed: when the round was sent (at least)
	err    error     // RenewFailed
}

// stall is a stretch of time in which the test process itself did not run
// (a ticker's gap), evidence of a loaded machine.
type stall struct{ from, to time.Time }

type recorder struct {
	mu     sync.Mutex
	events []event      // renewals, for checkRenewals
	watch  []watchEvent // renewal rounds and losses, for lapsed
	stalls []stall      // the process's stalls, for lapsed
}

const (
	stallTick = 20 * time.Millisecond
	stallMin  = lease / 10 // a ticker late by this much is a stall
)

// watchStalls records the process's stalls until stop is called; stop
// returns once the goroutine has exited.
func (r *recorder) watchStalls() (stop func()) {
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(stallTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			now := time.Now()
			if now.Sub(last) > stallTick+stallMin {
				r.mu.Lock()
				r.stalls = append(r.stalls, stall{last, now})
				r.mu.Unlock()
			}
			last = now
		}
	}()
	return func() { close(quit); <-exited }
}

func (r *recorder) Observe(ev redisync.Event) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Kind {
	case redisync.EventRenewed:
		r.events = append(r.events, event{now, ev.Primitive, ev.Count})
		r.watch = append(r.watch, watchEvent{at: now, kind: ev.Kind, layout: ev.Primitive, sent: now.Add(-ev.Latency)})
	case redisync.EventRenewFailed:
		r.watch = append(r.watch, watchEvent{at: now, kind: ev.Kind, layout: ev.Primitive, err: ev.Err})
	case redisync.EventLost:
		r.watch = append(r.watch, watchEvent{at: now, kind: ev.Kind, name: ev.Name})
	}
}

func (r *recorder) since(i int) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events[i:]...)
}

// span is a stretch of time over which the model had at most live leases
// of each layout.
type span struct {
	from, to time.Time
	live     map[string]int
}

type run struct {
	t         *rapid.T
	e         *env
	c         *redisync.Client
	rl        []*redisync.Client
	rec       *recorder
	locks     []*lockM
	byKind    map[string]*lockM
	seen      int // events checked
	spans     []span
	stepStart time.Time
	before    map[string]int
	transient map[string]int // leases alive only inside the current step
	closed    bool
	stopWatch func() // ends rec's stall watch
}

var bg = context.Background()

// avoidFlag leaves behaviours out of the generated sequences, so that on a
// tree where the model fails early at one defect it can still find the
// others: self (Lock on a default handle it holds), shared (goroutines
// sharing a handle), unlockctx (Unlock with a done ctx, but multilock's),
// multictx (multilock's Unlock with a done ctx), panic (Do with a
// panicking fn), owner (the two handles on one owner id), stall (a Lock sent
// into a server stall), wrongtype (a lock key overwritten with a string).
// "self-<kind>", "shared-<kind>", "stall-<kind>", "unlockctx-<kind>" and
// "panic-<kind>" leave it out for one kind of lock only (rlock, fairlock,
// rwlock, semaphore, multilock, redlock).
var avoidFlag = flag.String("lifecycle.avoid", "", "comma-separated behaviours the model leaves out: self,shared,unlockctx,multictx,panic,owner,stall,wrongtype, or one of them for one kind, as stall-semaphore")

// avoidFor is avoid for what on a lock of kind.
func avoidFor(what, kind string) bool { return avoid(what) || avoid(what+"-"+kind) }

func avoid(what string) bool {
	for _, a := range strings.Split(*avoidFlag, ",") {
		if a == what {
			return true
		}
	}
	return false
}

func (e *env) newRun(t *rapid.T) *run {
	r := &run{t: t, e: e, rec: &recorder{}, byKind: map[string]*lockM{}, transient: map[string]int{}}
	r.stopWatch = r.rec.watchStalls()
	r.c = redisync.New(e.lib[0], redisync.WithWatchdogTimeout(lease), redisync.WithObserver(r.rec))
	for i := range 3 {
		r.rl = append(r.rl, redisync.New(e.lib[1+i], redisync.WithWatchdogTimeout(lease), redisync.WithObserver(r.rec)))
	}
	c := r.c
	add := func(kind, name string, keys ...string) *lockM {
		lk := &lockM{kind: kind, name: name, keys: keys}
		r.locks = append(r.locks, lk)
		r.byKind[kind] = lk
		return lk
	}
	reg := func(lk *lockM, h *handle) *handle {
		h.lk = lk
		lk.handles = append(lk.handles, h)
		return h
	}

	lk := add("rlock", "r", "r")
	for _, spec := range []struct {
		label string
		opts  []rlock.Option
	}{
		{"d1", nil}, {"d2", nil}, {"re", reentrantRlock()},
		{"nr", []rlock.Option{rlock.WithNonReentrant()}},
		{"o1", []rlock.Option{rlock.WithOwner("shared-r")}},
		{"o2", []rlock.Option{rlock.WithOwner("shared-r")}},
	} {
		m := rlock.New(c, "r", spec.opts...)
		reg(lk, &handle{label: "rlock/" + spec.label, l: m, owner: m.Owner(), holdCount: m.HoldCount,
			layout: "lock", leases: 1, reentrant: spec.label == "re", nonReentrant: spec.label == "nr",
			sharedOwner: spec.label[0] == 'o'})
	}

	lk = add("fairlock", "f", "f")
	for _, spec := range []struct {
		label string
		opts  []fairlock.Option
	}{
		{"d1", nil}, {"d2", nil}, {"re", reentrantFairlock()},
		{"o1", []fairlock.Option{fairlock.WithOwner("shared-f")}},
		{"o2", []fairlock.Option{fairlock.WithOwner("shared-f")}},
	} {
		m := fairlock.New(c, "f", spec.opts...)
		reg(lk, &handle{label: "fairlock/" + spec.label, l: m, owner: m.Owner(), holdCount: m.HoldCount,
			layout: "lock", leases: 1, reentrant: spec.label == "re", sharedOwner: spec.label[0] == 'o'})
	}

	lk = add("rwlock", "rw", "rw")
	for _, spec := range []struct {
		label string
		opts  []rwlock.Option
	}{{"d1", nil}, {"d2", nil}, {"re", reentrantRWLock()}} {
		m := rwlock.New(c, "rw", spec.opts...)
		w := reg(lk, &handle{label: "rwlock/" + spec.label + "/write", l: m.WriteLocker(), owner: m.Owner(),
			layout: "rwlock", leases: 1, reentrant: spec.label == "re"})
		rd := reg(lk, &handle{label: "rwlock/" + spec.label + "/read", side: read, l: m.ReadLocker(), owner: m.Owner(),
			layout: "rwlock", leases: 1, reentrant: spec.label == "re"})
		w.peer, rd.peer = rd, w
	}

	lk = add("semaphore", "sem", derived(keys.SemHoldersPrefix, "sem"), derived(keys.SemPermitsPrefix, "sem"))
	sem := semaphore.New(c, "sem", semCap)
	for i := range 3 {
		reg(lk, &handle{label: fmt.Sprintf("sem/p%d", i+1), side: permit, sem: sem, layout: "semaphore", leases: 1})
	}

	lk = add("multilock", "{m}", "{m}:a", "{m}:b")
	for i := range 2 {
		a, b := rlock.New(c, "{m}:a"), fairlock.New(c, "{m}:b")
		reg(lk, &handle{label: fmt.Sprintf("multilock/m%d", i+1), l: multilock.New(a, b), layout: "lock", leases: 2,
			comps: []*handle{{owner: a.Owner(), label: "{m}:a"}, {owner: b.Owner(), label: "{m}:b"}}})
	}

	lk = add("redlock", "rl", "rl")
	for i := range 2 {
		// A quarter of the lease, the largest default: with lease/10
		// (100 ms) every node "did not answer in time" in 3 of 10 runs
		// beside a second make test (load 20 on two cores), and a Lock or
		// Unlock the model expects to succeed failed. A paused server 0
		// still costs a redlock call only this long, and the grant keeps
		// three quarters of its validity.
		m := redlock.New(r.rl, "rl", redlock.WithNodeTimeout(lease/4))
		reg(lk, &handle{label: fmt.Sprintf("redlock/rl%d", i+1), l: m, layout: "redlock", leases: 1})
	}
	r.before = r.live()
	r.stepStart = time.Now()
	return r
}

// teardown leaves the servers as the run found them: running and empty.
func (r *run) teardown() {
	defer r.stopWatch()
	r.e.srv[0].Resume()
	r.c.Close()
	for _, c := range r.rl {
		c.Close()
	}
	for _, rc := range r.e.raw {
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		_ = rc.Do(ctx, rc.B().Flushall().Build()).Error()
		cancel()
	}
}
