package lifecycle

// The steps of a run: what each does to the handles and servers, and what
// the model expects of its results.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/redlock"
)

func (h *handle) lock(ctx context.Context) error {
	if h.side != permit {
		return h.l.Lock(ctx)
	}
	p, err := h.sem.Acquire(ctx, 1)
	if err == nil {
		h.p = p
	}
	return err
}

func (h *handle) tryLock(ctx context.Context) (bool, error) {
	if h.side != permit {
		return h.l.TryLock(ctx)
	}
	p, ok, err := h.sem.TryAcquire(ctx, 1)
	if ok {
		h.p = p
	}
	return ok, err
}

func (h *handle) unlock(ctx context.Context) error {
	if h.side != permit {
		return h.l.Unlock(ctx)
	}
	return h.p.Release(ctx)
}

func (h *handle) tokenNow() uint64 {
	if h.side != permit {
		return h.l.Token()
	}
	return h.p.Token()
}

func (h *handle) doneNow() <-chan struct{} {
	if h.side != permit {
		return h.l.Done()
	}
	return h.p.Done()
}

func (h *handle) errNow() error {
	if h.side != permit {
		return h.l.Err()
	}
	return h.p.Err()
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// drawCtx draws live (three times in five), cancelled or expired.
func drawCtx(t *rapid.T) int {
	return max(0, rapid.IntRange(-2, 2).Draw(t, "ctx"))
}

func ctxOf(kind int, live time.Duration) (context.Context, context.CancelFunc) {
	switch kind {
	case 1:
		ctx, cancel := context.WithCancel(bg)
		cancel()
		return ctx, cancel
	case 2:
		return context.WithDeadline(bg, time.Now().Add(-time.Second))
	}
	return context.WithTimeout(bg, live)
}

var ctxNames = []string{"live", "cancelled", "expired"}

func (r *run) pickHandle(t *rapid.T, ok func(*handle) bool) *handle {
	var kinds []string
	for _, lk := range r.locks {
		for _, h := range lk.handles {
			if ok(h) {
				kinds = append(kinds, lk.kind)
				break
			}
		}
	}
	if len(kinds) == 0 {
		t.Skip("no candidate handle")
	}
	lk := r.byKind[rapid.SampledFrom(kinds).Draw(t, "lock")]
	var labels []string
	byLabel := map[string]*handle{}
	for _, h := range lk.handles {
		if ok(h) {
			labels = append(labels, h.label)
			byLabel[h.label] = h
		}
	}
	return byLabel[rapid.SampledFrom(labels).Draw(t, "handle")]
}

// lockStep is Lock or TryLock on a handle, with a live, cancelled or
// expired ctx.
func (r *run) lockStep(t *rapid.T) {
	// One Lock in three goes to a handle that already holds (re-entry,
	// a default handle's wait, WithNonReentrant's refusal), one in six to a
	// handle whose owner id another handle holds, if any.
	focus := rapid.IntRange(0, 5).Draw(t, "focus")
	cand := func(h *handle) bool {
		o, _ := r.outcome(h)
		return o != oSkip && !(o == oSelf && avoidFor("self", h.lk.kind)) && !(h.sharedOwner && avoid("owner"))
	}
	var narrow func(*handle) bool
	switch focus {
	case 0, 1:
		narrow = func(h *handle) bool { return h.count > 0 }
	case 2:
		narrow = func(h *handle) bool { o, from := r.outcome(h); return o == oNest && from != h }
	}
	if narrow != nil && r.anyOf(func(h *handle) bool { return cand(h) && narrow(h) }) {
		base := cand
		cand = func(h *handle) bool { return base(h) && narrow(h) }
	}
	h := r.pickHandle(t, cand)
	o, from := r.outcome(h)
	try := rapid.Bool().Draw(t, "try")
	ck := drawCtx(t)
	live := liveWait
	if o == oBusy || o == oSelf {
		live = busyWait
	}
	ctx, cancel := ctxOf(ck, live)
	defer cancel()
	op := "Lock"
	var ok bool
	var err error
	if try {
		op = "TryLock"
		ok, err = h.tryLock(ctx)
	} else {
		err = h.lock(ctx)
		ok = err == nil
	}
	what := fmt.Sprintf("%s.%s(%s ctx) with the model at %s", h.label, op, ctxNames[ck], outcomeNames[o])
	r.e.stats[fmt.Sprintf("%s %s ctx %s", op, ctxNames[ck], outcomeNames[o])]++
	if ck != 0 {
		if ok {
			t.Fatalf("%s: granted with a done ctx", what)
		}
		if err != nil && !errors.Is(err, ctx.Err()) && !(o == oNR && errors.Is(err, redisync.ErrNonReentrant)) {
			t.Fatalf("%s: %v, want the ctx's error", what, err)
		}
		return
	}
	var qerr *redlock.QuorumError
	switch o {
	case oGrant, oNest:
		if try && !ok && errors.As(err, &qerr) {
			// A node slower than the node timeout on a loaded machine: the
			// attempt could not tell, and must have left nothing behind.
			r.e.stats["redlock TryLock without a quorum"]++
			return
		}
		if !ok || err != nil {
			t.Fatalf("%s: (%v, %v), want it held", what, ok, err)
		}
		r.granted(h, o, from)
	case oBusy, oSelf:
		if ok {
			if o == oSelf {
				t.Fatalf("%s: got in again: a default handle must behave like sync.Mutex (wait), not re-enter", what)
			}
			t.Fatalf("%s: granted while another owner holds it", what)
		}
		if try && err != nil {
			t.Fatalf("%s: %v, want (false, nil)", what, err)
		}
		if !try && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: %v, want context.DeadlineExceeded", what, err)
		}
	case oNR:
		if ok || !errors.Is(err, redisync.ErrNonReentrant) {
			t.Fatalf("%s: (%v, %v), want ErrNonReentrant", what, ok, err)
		}
	}
}

// unlockStep is Unlock (Release) with a live, cancelled or expired ctx.
func (r *run) unlockStep(t *rapid.T) {
	// Mostly a handle that holds something; sometimes one that does not.
	heldOnly := rapid.IntRange(0, 3).Draw(t, "held only") > 0
	h := r.pickHandle(t, func(h *handle) bool {
		switch {
		case r.closed, h.lk.uncertain() && !h.lost:
			return false
		case heldOnly && h.count == 0 && !h.lost:
			return false
		case h.side == permit:
			return h.p != nil
		}
		return true
	})
	ck := 0
	if !h.lost && !avoidFor(map[bool]string{true: "multictx", false: "unlockctx"}[h.lk.kind == "multilock"], h.lk.kind) {
		ck = rapid.IntRange(0, 2).Draw(t, "ctx") // the everyday `defer mu.Unlock(ctx)` of a done request
	}
	ctx, cancel := ctxOf(ck, liveWait)
	defer cancel()
	err := h.unlock(ctx)
	what := fmt.Sprintf("%s.Unlock(%s ctx) with count %d", h.label, ctxNames[ck], h.count)
	r.e.stats[fmt.Sprintf("Unlock %s ctx count %d lost %v", ctxNames[ck], h.count, h.lost)]++
	switch {
	case h.lost:
		if !errors.Is(err, redisync.ErrLockLost) {
			t.Fatalf("%s after a loss: %v, want ErrLockLost", what, err)
		}
		h.lost, h.wasLost = false, true
	case h.count == 0:
		if !errors.Is(err, redisync.ErrNotHeld) && !(ck != 0 && errors.Is(err, ctx.Err())) {
			t.Fatalf("%s: %v, want ErrNotHeld", what, err)
		}
	default:
		if err != nil && !(ck != 0 && errors.Is(err, ctx.Err())) {
			t.Fatalf("%s: %v", what, err)
		}
		h.count--
		if h.count == 0 {
			h.token = 0
		}
	}
}

// sharedStep has two goroutines share one default handle, each locking it,
// staying inside a moment and unlocking: they must never be inside at once.
func (r *run) sharedStep(t *rapid.T) {
	if avoid("shared") {
		t.Skip("avoided")
	}
	h := r.pickHandle(t, func(h *handle) bool {
		if h.side != exclusive || h.reentrant || h.nonReentrant || h.sharedOwner || avoidFor("shared", h.lk.kind) {
			return false
		}
		o, _ := r.outcome(h)
		return o == oGrant
	})
	r.transient[h.layout] += h.leases
	r.e.stats["shared handle "+h.lk.kind]++
	var inside, overlaps atomic.Int32
	var mu sync.Mutex
	var tokens []uint64
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			ctx, cancel := context.WithTimeout(bg, liveWait)
			defer cancel()
			if err := h.l.Lock(ctx); err != nil {
				errs <- fmt.Errorf("Lock: %w", err)
				return
			}
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			mu.Lock()
			tokens = append(tokens, h.l.Token())
			mu.Unlock()
			time.Sleep(sharedHold)
			inside.Add(-1)
			if err := h.l.Unlock(ctx); err != nil {
				errs <- fmt.Errorf("Unlock: %w", err)
				return
			}
			errs <- nil
		}()
	}
	var failed []error
	for range 2 {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	if overlaps.Load() > 0 {
		t.Fatalf("two goroutines sharing the default handle %s were inside at once (errors: %v)", h.label, failed)
	}
	if len(failed) > 0 {
		t.Fatalf("goroutines sharing %s: %v", h.label, failed)
	}
	for _, tok := range tokens {
		if tok <= h.lk.lastToken {
			t.Fatalf("%s: token %d is not above the last grant's %d", h.label, tok, h.lk.lastToken)
		}
		h.lk.lastToken = tok
	}
}

var errFn = errors.New("fn failed")

type panicValue struct{}

// doStep runs redisync.Do with an fn that succeeds, fails or panics.
func (r *run) doStep(t *rapid.T) {
	h := r.pickHandle(t, func(h *handle) bool {
		if h.side == permit {
			return false
		}
		o, _ := r.outcome(h)
		return (o == oGrant || o == oNest) && !(h.sharedOwner && avoid("owner"))
	})
	o, from := r.outcome(h)
	mode := rapid.IntRange(0, 2).Draw(t, "fn") // 0 ok, 1 fails, 2 panics
	if mode == 2 && avoidFor("panic", h.lk.kind) {
		mode = 1
	}
	r.transient[h.layout] += h.leases
	ctx, cancel := context.WithTimeout(bg, liveWait)
	defer cancel()
	var inFn bool
	var inErr error
	var tok uint64
	err, recovered := func() (err error, recovered any) {
		defer func() { recovered = recover() }()
		err = redisync.Do(ctx, h.l, func(ctx context.Context) error {
			inFn = true
			inErr = h.l.Err()
			tok = h.l.Token()
			switch mode {
			case 1:
				return errFn
			case 2:
				panic(panicValue{})
			}
			return nil
		})
		return err, nil
	}()
	what := fmt.Sprintf("Do(%s, fn %s)", h.label, []string{"succeeds", "fails", "panics"}[mode])
	r.e.stats["Do fn "+[]string{"succeeds", "fails", "panics"}[mode]]++
	switch {
	case !inFn:
		t.Fatalf("%s: fn never ran: %v", what, err)
	case inErr != nil:
		t.Fatalf("%s: inside fn the handle's Err is %v", what, inErr)
	case mode == 2 && recovered != (panicValue{}):
		t.Fatalf("%s: recovered %v, want fn's panic", what, recovered)
	case mode != 2 && recovered != nil:
		t.Fatalf("%s: panicked: %v", what, recovered)
	case mode == 1 && !errors.Is(err, errFn):
		t.Fatalf("%s: %v, want fn's error", what, err)
	case mode == 0 && err != nil:
		t.Fatalf("%s: %v", what, err)
	}
	switch o {
	case oGrant:
		if h.side != read && tok <= h.lk.lastToken {
			t.Fatalf("%s: token %d is not above the last grant's %d", what, tok, h.lk.lastToken)
		}
		h.lk.lastToken = max(h.lk.lastToken, tok)
	case oNest:
		if tok != from.token {
			t.Fatalf("%s: nested token %d, want %d", what, tok, from.token)
		}
	}
}

// waitStep lets time pass (renewals happen meanwhile).
func (r *run) waitStep(t *rapid.T) {
	time.Sleep(time.Duration(rapid.IntRange(0, int(lease/4/time.Millisecond)).Draw(t, "ms")) * time.Millisecond)
}

// faultStep strikes server 0: DEL or SET over a lock's key, FLUSHALL,
// SCRIPT FLUSH, a pause past the lease, or a Lock sent into such a pause.
func (r *run) faultStep(t *rapid.T) {
	if r.closed {
		t.Skip("closed")
	}
	// Stalls cost more than a lease of real time each: keep them rare.
	k := rapid.IntRange(0, 23).Draw(t, "fault")
	switch {
	case k < 8:
		lk := r.byKind[rapid.SampledFrom(kindsOf(r.locks)).Draw(t, "target")]
		keys := lk.keys
		if lk.kind == "multilock" {
			keys = []string{rapid.SampledFrom(keys).Draw(t, "component")}
		}
		r.raw(t, append([]string{"DEL"}, keys...)...)
		r.struck(t, lk, "DEL "+strings.Join(keys, " "))
	case k < 13:
		if avoid("wrongtype") {
			return
		}
		var held []*lockM
		for _, lk := range r.locks {
			if lk.kind != "semaphore" && lk.kind != "redlock" && r.holds(lk) {
				held = append(held, lk)
			}
		}
		if len(held) == 0 {
			return
		}
		lk := r.byKind[rapid.SampledFrom(kindsOf(held)).Draw(t, "target")]
		key := rapid.SampledFrom(lk.keys).Draw(t, "key")
		r.raw(t, "SET", key, "not a lock")
		r.struck(t, lk, "SET "+key)
		r.raw(t, "DEL", key)
	case k < 15:
		r.raw(t, "FLUSHALL")
		for _, lk := range r.locks {
			r.struckQuiet(lk)
		}
		r.awaitLosses(t, "FLUSHALL")
	case k == 21:
		r.unlockInPause(t)
	case k < 22:
		r.raw(t, "SCRIPT", "FLUSH")
		r.e.stats["fault SCRIPT FLUSH"]++
	case k < 23:
		r.e.srv[0].Pause()
		time.Sleep(pauseFor)
		r.e.srv[0].Resume()
		for _, lk := range r.locks {
			r.struckQuiet(lk)
		}
		r.awaitLosses(t, "PAUSE past the lease")
	case avoid("stall"):
		return
	default:
		r.stalledLock(t)
	}
}

// derived is the name of a primitive's derived key, as the library forms it.
func derived(prefix, name string) string {
	k, _ := keys.Derived(prefix, name)
	return k
}

func kindsOf(locks []*lockM) []string {
	var kinds []string
	for _, lk := range locks {
		kinds = append(kinds, lk.kind)
	}
	return kinds
}

// anyOf reports whether some handle satisfies ok.
func (r *run) anyOf(ok func(*handle) bool) bool {
	for _, lk := range r.locks {
		for _, h := range lk.handles {
			if ok(h) {
				return true
			}
		}
	}
	return false
}

// holds reports whether the model has a live hold on lk.
func (r *run) holds(lk *lockM) bool {
	for _, h := range lk.handles {
		if h.count > 0 {
			return true
		}
	}
	return false
}

// struck marks every hold on lk lost (but redlock's) and waits
// until they are reported lost.
func (r *run) struck(t *rapid.T, lk *lockM, what string) {
	r.struckQuiet(lk)
	r.awaitLosses(t, what)
}

func (r *run) struckQuiet(lk *lockM) {
	lk.lostAt = time.Now()
	if lk.kind == "redlock" {
		return // one node of three: the hold stands
	}
	for _, h := range lk.handles {
		if h.count > 0 {
			h.count, h.token, h.lost = 0, 0, true
			r.e.stats["lost "+lk.kind]++
		}
	}
}

// awaitLosses waits until every hold the model marked lost reports it.
func (r *run) awaitLosses(t *rapid.T, what string) {
	deadline := time.Now().Add(lossBound)
	r.e.stats["fault "+strings.Fields(what)[0]]++
	for _, lk := range r.locks {
		for _, h := range lk.handles {
			if !h.lost {
				continue
			}
			for !isDone(h.doneNow()) {
				if time.Now().After(deadline) {
					t.Fatalf("after %s: %s not reported lost within %v", what, h.label, lossBound)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := h.errNow(); !errors.Is(err, redisync.ErrLockLost) {
				t.Fatalf("after %s: %s's Err is %v, want ErrLockLost", what, h.label, err)
			}
		}
	}
}

// unlockInPause unlocks a held handle while server 0 is paused, with a ctx
// that ends before the server is back: the hold ends at once, Unlock
// returns the ctx's error, and the release lands once the server answers.
func (r *run) unlockInPause(t *rapid.T) {
	h := r.pickHandle(t, func(h *handle) bool {
		return h.count > 0 && !avoidFor("unlockctx", h.lk.kind) && !(h.lk.kind == "multilock" && avoid("multictx"))
	})
	r.e.stats["fault UNLOCK-IN-PAUSE"]++
	r.e.srv[0].Pause()
	ctx, cancel := context.WithTimeout(bg, unlockWait)
	err := h.unlock(ctx)
	cancel()
	time.Sleep(unlockPause)
	r.e.srv[0].Resume()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s.Unlock(ctx of %v) while server 0 is paused: %v, want nil or context.DeadlineExceeded", h.label, unlockWait, err)
	}
	h.count--
	if h.count == 0 {
		h.token = 0
	}
}

// stalledLock sends a Lock into a pause of server 0 longer than the lease:
// the grant's lease has run out by the time its reply arrives, so Lock must
// not report it (it may take the lock again and return nil, with a live
// hold).
func (r *run) stalledLock(t *rapid.T) {
	h := r.pickHandle(t, func(h *handle) bool {
		if h.lk.kind == "redlock" || h.side == read || avoidFor("stall", h.lk.kind) {
			return false
		}
		o, _ := r.outcome(h)
		return o == oGrant
	})
	r.e.srv[0].Pause()
	res := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		res <- h.lock(ctx)
	}()
	time.Sleep(pauseFor)
	r.e.srv[0].Resume()
	err := <-res
	if err != nil {
		t.Fatalf("%s.Lock sent into a pause of %v: %v, want it held once the server is back", h.label, pauseFor, err)
	}
	grantedAt := time.Now()
	// A spent grant is reported lost at once or at the watchdog's next
	// look; a live one lasts about the lease.
	time.Sleep(lease / 4)
	if isDone(h.doneNow()) {
		t.Fatalf("%s.Lock sent into a pause of %v returned nil for a hold reported lost within %v (Err %v): the grant's lease had run out",
			h.label, pauseFor, time.Since(grantedAt).Round(time.Millisecond), h.errNow())
	}
	for _, lk := range r.locks {
		r.struckQuiet(lk)
	}
	r.awaitLosses(t, "STALL past the lease")
	r.granted(h, oGrant, nil)
}

// finish ends a run: either Client.Close while holding (every hold is
// reported lost with ErrClosed, nothing is renewed after) or Unlock of
// everything (nothing is left in Redis).
func (r *run) finish(t *rapid.T) {
	if rapid.Bool().Draw(t, "close while holding") {
		r.e.stats["end with Client.Close"]++
		r.c.Close()
		r.closed = true
		closedAt := time.Now()
		for _, lk := range r.locks {
			if lk.kind == "redlock" {
				continue
			}
			for _, h := range lk.handles {
				if h.count == 0 {
					continue
				}
				// A multilock learns of the loss from its watcher goroutine.
				lostErr := r.poll(time.Second, func() error {
					if !isDone(h.doneNow()) || !errors.Is(h.errNow(), redisync.ErrLockLost) {
						return fmt.Errorf("after Client.Close: %s still held (Err %v), want lost", h.label, h.errNow())
					}
					return nil
				})
				if lostErr != nil {
					t.Fatal(lostErr)
				}
				if h.side != exclusive || lk.kind != "multilock" {
					if err := h.errNow(); !errors.Is(err, redisync.ErrClosed) {
						t.Fatalf("after Client.Close: %s's Err is %v, want it to match ErrClosed", h.label, err)
					}
				}
				h.count, h.lost = 0, false
				if h.side != permit {
					// Bounded: a Lock that waited instead (at a closed gate)
					// must fail the run, not hang it.
					ctx, cancel := context.WithTimeout(bg, liveWait)
					err := h.l.Lock(ctx)
					cancel()
					if !errors.Is(err, redisync.ErrClosed) {
						t.Fatalf("%s.Lock after Client.Close: %v, want ErrClosed", h.label, err)
					}
				}
			}
		}
		time.Sleep(lease / 2)
		for _, ev := range r.rec.since(r.seen) {
			if ev.at.After(closedAt) && ev.layout != "redlock" { // redlock runs on other Clients
				t.Fatalf("a renewal of %d %s holds %v after Client.Close returned", ev.count, ev.layout, ev.at.Sub(closedAt))
			}
		}
		return
	}
	for _, lk := range r.locks {
		for _, h := range lk.handles {
			for h.count > 0 || h.lost {
				ctx, cancel := context.WithTimeout(bg, liveWait)
				err := h.unlock(ctx)
				cancel()
				switch {
				case h.lost && !errors.Is(err, redisync.ErrLockLost):
					t.Fatalf("final %s.Unlock after a loss: %v", h.label, err)
				case !h.lost && err != nil:
					t.Fatalf("final %s.Unlock: %v", h.label, err)
				case h.lost:
					h.lost, h.wasLost = false, true
				default:
					h.count--
				}
			}
		}
	}
	r.check(t)
	if err := r.poll(releaseBound, r.leftovers); err != nil {
		t.Fatalf("after every handle unlocked: %v", err)
	}
}
