package lifecycle

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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

// The model drives random sequences of operations over every primitive on
// real servers and checks, after every step, each handle's own view (Done,
// Err, Token), the state in Redis (hash fields and counts, PTTL, queues,
// permits, leftovers) and the renewals the Client reports, against a
// reference model of the hold lifecycle:
//
//   - a default handle is a sync.Mutex: a Lock on a handle this process
//     holds waits (bounded by ctx), TryLock says busy, and goroutines that
//     share the handle exclude each other; a reentrant handle (WithReentrant,
//     or WithOwner) nests, and two handles on one owner id each own their own
//     holds; WithNonReentrant refuses at once;
//   - Unlock ends the hold locally at once (Done closed, Err ErrNotHeld) and
//     the release reaches Redis whatever its ctx says;
//   - Do releases when fn fails or panics;
//   - a hold whose key is deleted, overwritten or flushed, or whose server
//     stalls past the lease, is reported lost (and only that hold); others
//     stay held and renewed;
//   - Lock never returns a grant whose lease already ran out;
//   - no renewal is made for a hold that is over;
//   - Lock and TryLock with a done ctx change nothing; fencing tokens of a
//     name increase from grant to grant.
//
// Servers: three redis-servers, started once per test. The main Client (all
// primitives but redlock) is on server 0; redlock runs over three other
// Clients on servers 0, 1 and 2, so faults on server 0 cost it one vote.
// Every run starts from FLUSHALL with fresh Clients.

const (
	lease = time.Second // the watchdog timeout of every Client
	// releaseBound bounds how long a release may take to show in Redis. It
	// is below the PTTL a renewed key has left (at least 2/3 of the lease),
	// so a hold that merely expires instead of being released is caught.
	releaseBound = lease / 2
	// lossBound bounds how long a hold takes to be reported lost after its
	// key is deleted (the next renewal, a third of the lease) or its server
	// stalls (the lease), with room for a loaded machine.
	lossBound = lease + 2*time.Second
	busyWait  = 80 * time.Millisecond // ctx of a Lock the model expects to wait in vain
	liveWait  = 5 * time.Second       // ctx of a Lock the model expects to succeed
	pauseFor  = lease + 300*time.Millisecond
	// renewGrace covers a renewal batch sent just before a hold ended and
	// answered late on a loaded machine; a hold renewed after its end is
	// renewed every third of the lease, so it still shows.
	renewGrace = lease
	semCap     = 2
	// sharedHold is how long each goroutine sharing a handle stays inside.
	sharedHold = 30 * time.Millisecond
)

// side is what a handle holds.
type side int

const (
	exclusive side = iota // rlock, fairlock, rwlock write side, multilock, redlock
	read                  // rwlock read side
	permit                // one semaphore permit at a time
)

// handle is one lock handle of the library, with the model's view of it.
type handle struct {
	label     string
	lk        *lockM
	side      side
	l         redisync.Locker // exclusive and read sides
	sem       *semaphore.Semaphore
	p         *semaphore.Permit // permit side: the last permit acquired
	owner     string            // the owner id in Redis hashes ("" when not one)
	peer      *handle           // rwlock: the other side of the same RWMutex
	comps     []*handle         // multilock: the components (views not checked)
	holdCount func(context.Context) (int, error)
	layout    string // the renewal layout: "lock", "rwlock", "semaphore", "redlock"
	leases    int    // watchdog leases while held

	reentrant, nonReentrant, sharedOwner bool

	count   int    // holds of this handle (the model)
	token   uint64 // the token seen at grant
	lost    bool   // lost and not yet unlocked
	wasLost bool   // the last hold ended by a loss
}

// lockM is the model of one lock name.
type lockM struct {
	kind       string // rlock, fairlock, rwlock, semaphore, multilock, redlock
	name       string
	keys       []string // the lock's keys on server 0 a fault can strike
	handles    []*handle
	lastToken  uint64
	redlockVal string    // redlock: the value of the key on the nodes while held
	lostAt     time.Time // when a fault last struck it
}

// uncertain: a multilock lost through one component may still hold the
// other until its Unlock; the model does not predict that lock until then.
func (lk *lockM) uncertain() bool {
	if lk.kind != "multilock" {
		return false
	}
	for _, h := range lk.handles {
		if h.lost {
			return true
		}
	}
	return false
}

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

type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) Observe(ev redisync.Event) {
	if ev.Kind != redisync.EventRenewed {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, event{time.Now(), ev.Primitive, ev.Count})
	r.mu.Unlock()
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
		m := redlock.New(r.rl, "rl", redlock.WithNodeTimeout(lease/10))
		reg(lk, &handle{label: fmt.Sprintf("redlock/rl%d", i+1), l: m, layout: "redlock", leases: 1})
	}
	r.before = r.live()
	r.stepStart = time.Now()
	return r
}

// teardown leaves the servers as the run found them: running and empty.
func (r *run) teardown() {
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

// --- the operations of a handle ---

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

// --- what the model predicts ---

type outcome int

const (
	oSkip  outcome = iota // not modelled here
	oGrant                // a new hold
	oNest                 // one more hold on a hold of this owner
	oBusy                 // another owner holds it
	oSelf                 // a default handle that holds it: Lock waits, TryLock is busy
	oNR                   // WithNonReentrant handle that holds it
)

// outcome predicts a Lock on h; for oNest, from is the hold it nests on.
func (r *run) outcome(h *handle) (o outcome, from *handle) {
	lk := h.lk
	if h.lost || lk.uncertain() || r.closed {
		return oSkip, nil
	}
	switch h.side {
	case permit:
		if h.count > 0 {
			return oSkip, nil
		}
		used := 0
		for _, o := range lk.handles {
			used += o.count
		}
		if used >= semCap {
			return oBusy, nil
		}
		return oGrant, nil
	case read:
		if h.peer.count > 0 || h.peer.lost {
			return oSkip, nil // write-to-read is not modelled
		}
		if h.count > 0 {
			if h.reentrant {
				return oNest, h
			}
			return oSkip, nil
		}
		for _, o := range lk.handles {
			if o.side == exclusive && o.count > 0 {
				return oBusy, nil
			}
		}
		return oGrant, nil
	}
	if h.count > 0 {
		switch {
		case h.reentrant || h.sharedOwner:
			return oNest, h
		case h.nonReentrant:
			return oNR, nil
		}
		return oSelf, nil
	}
	if h.peer != nil && (h.peer.count > 0 || h.peer.lost) {
		return oSkip, nil // read-to-write (ErrUpgrade) is not modelled
	}
	for _, o := range lk.handles {
		if o == h || o.count == 0 {
			continue
		}
		if h.sharedOwner && o.owner == h.owner {
			return oNest, o
		}
		return oBusy, nil
	}
	for _, o := range lk.handles {
		if h.sharedOwner && o != h && o.owner == h.owner && o.lost {
			return oSkip, nil // the owner's other handle was lost and not unlocked
		}
	}
	return oGrant, nil
}

// granted records a new hold of h (after Lock or TryLock succeeded).
func (r *run) granted(h *handle, o outcome, from *handle) {
	t := r.t
	tok := h.tokenNow()
	if tok == 0 {
		t.Fatalf("%s: granted with token 0", h.label)
	}
	switch o {
	case oNest:
		if tok != from.token {
			t.Fatalf("%s: a nested hold has token %d, the hold it nests on %d", h.label, tok, from.token)
		}
	case oGrant:
		if h.side != read && tok <= h.lk.lastToken {
			t.Fatalf("%s: token %d is not above the last grant's %d", h.label, tok, h.lk.lastToken)
		}
		h.lk.lastToken = max(h.lk.lastToken, tok)
		if h.lk.kind == "redlock" {
			v, err := r.e.raw[1].Do(bg, r.e.raw[1].B().Get().Key("rl").Build()).ToString()
			if err != nil {
				t.Fatalf("%s: granted, but node 1 has no key: %v", h.label, err)
			}
			h.lk.redlockVal = v
		}
	}
	h.count++
	h.token = tok
	h.wasLost = false
	r.e.stats[outcomeNames[o]+" "+h.lk.kind]++
	if o == oNest && from != h {
		r.e.stats["nest on the owner's other handle"]++
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

// --- steps ---

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

var outcomeNames = []string{"skip", "grant", "nest", "busy", "self-held", "non-reentrant"}

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
		case h.sharedOwner && h.count == 0 && !h.lost:
			for _, o := range h.lk.handles {
				if o != h && o.owner == h.owner && (o.count > 0 || o.lost) {
					return false // releasing a sibling's hold is resume semantics, not modelled
				}
			}
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
	time.Sleep(50 * time.Millisecond)
	if isDone(h.doneNow()) {
		t.Fatalf("%s.Lock sent into a pause of %v returned nil for a hold that ended %v later (Err %v): the grant's lease had run out",
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
					if err := h.l.Lock(bg); !errors.Is(err, redisync.ErrClosed) {
						t.Fatalf("Lock after Client.Close: %v, want ErrClosed", err)
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
				err := h.unlock(bg)
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

// --- checks ---

func (r *run) check(t *rapid.T) {
	r.checkViews(t)
	r.checkRenewals(t)
	if err := r.poll(releaseBound, r.redisState); err != nil {
		t.Fatalf("Redis does not match the model within %v: %v", releaseBound, err)
	}
	r.stepStart = time.Now()
	r.before = r.live()
	clear(r.transient)
}

// checkViews compares each handle's Done, Err and Token with the model.
func (r *run) checkViews(t *rapid.T) {
	for _, lk := range r.locks {
		for _, h := range lk.handles {
			if h.side == permit && h.p == nil {
				continue
			}
			done, err, tok := isDone(h.doneNow()), h.errNow(), h.tokenNow()
			switch {
			case h.count > 0:
				if done || err != nil || tok != h.token {
					t.Fatalf("%s: the model holds it %d time(s) with token %d; the handle says Done closed=%v, Err=%v, Token=%d",
						h.label, h.count, h.token, done, err, tok)
				}
			case h.lost:
				if !done || !errors.Is(err, redisync.ErrLockLost) {
					t.Fatalf("%s: the model has it lost; the handle says Done closed=%v, Err=%v", h.label, done, err)
				}
			case r.closed:
			default:
				okErr := errors.Is(err, redisync.ErrNotHeld) || (h.wasLost && errors.Is(err, redisync.ErrLockLost))
				if !done || !okErr || (h.side != permit && tok != 0) {
					t.Fatalf("%s: the model has it released; the handle says Done closed=%v, Err=%v, Token=%d",
						h.label, done, err, tok)
				}
			}
		}
	}
}

// live counts the watchdog leases the model has alive, by layout.
func (r *run) live() map[string]int {
	n := map[string]int{}
	for _, lk := range r.locks {
		for _, h := range lk.handles {
			if h.layout != "" && (h.count > 0 || (h.lost && lk.kind == "multilock")) {
				n[h.layout] += h.leases
			}
		}
	}
	return n
}

// checkRenewals fails on a renewal batch with more holds than the model had
// alive when it was sent: a renewal of a hold that is over.
func (r *run) checkRenewals(t *rapid.T) {
	now := time.Now()
	after := r.live()
	during := map[string]int{}
	for _, layout := range []string{"lock", "rwlock", "semaphore", "redlock"} {
		during[layout] = max(r.before[layout], after[layout]) + r.transient[layout]
	}
	r.spans = append(r.spans, span{r.stepStart, now, during})
	evs := r.rec.since(r.seen)
	r.seen += len(evs)
	for _, ev := range evs {
		allowed := 0
		for _, s := range r.spans {
			if !ev.at.Before(s.from) && !ev.at.After(s.to.Add(renewGrace)) {
				allowed = max(allowed, s.live[ev.layout])
			}
		}
		if ev.count > allowed {
			t.Fatalf("a renewal batch of %d %s hold(s) while the model had at most %d alive (a renewal of a hold that is over)",
				ev.count, ev.layout, allowed)
		}
	}
	if len(r.spans) > 64 {
		r.spans = r.spans[len(r.spans)-64:]
	}
}

// poll retries check until it passes or within runs out.
func (r *run) poll(within time.Duration, check func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *run) raw(t *rapid.T, args ...string) {
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	rc := r.e.raw[0]
	if err := rc.Do(ctx, rc.B().Arbitrary(args...).Build()).Error(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// rawOn runs one command on server i for a check.
func (r *run) rawOn(i int, args ...string) rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	rc := r.e.raw[i]
	return rc.Do(ctx, rc.B().Arbitrary(args...).Build())
}

// hashState checks a hash-layout lock key against owner → count (fields
// starting with "redisync:" are ours and skipped): absent when want is empty,
// otherwise exactly those fields and a positive PTTL.
func (r *run) hashState(key string, want map[string]int64, extra map[string]string) error {
	got, err := r.rawOn(0, "HGETALL", key).AsStrMap()
	if err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("HGETALL %s: %w", key, err)
	}
	if len(want) == 0 {
		if len(got) > 0 {
			return fmt.Errorf("%s should be free, Redis has %v", key, got)
		}
		return nil
	}
	fields := map[string]string{}
	for f, v := range got {
		if !strings.HasPrefix(f, "redisync:") {
			fields[f] = v
		}
	}
	wantFields := map[string]string{}
	for f, n := range want {
		wantFields[f] = fmt.Sprint(n)
	}
	for f, v := range extra {
		wantFields[f] = v
	}
	if fmt.Sprint(fields) != fmt.Sprint(wantFields) {
		return fmt.Errorf("%s: Redis has %v, the model %v", key, fields, wantFields)
	}
	if pttl, _ := r.rawOn(0, "PTTL", key).AsInt64(); pttl <= 0 {
		return fmt.Errorf("%s is held but its PTTL is %d", key, pttl)
	}
	return nil
}

func (r *run) absent(i int, keys ...string) error {
	for _, k := range keys {
		if n, _ := r.rawOn(i, "EXISTS", k).AsInt64(); n != 0 {
			return fmt.Errorf("%s should not exist on server %d", k, i)
		}
	}
	return nil
}

// redisState compares Redis with the model.
func (r *run) redisState() error {
	if r.closed {
		return nil
	}
	for _, lk := range r.locks {
		if err := r.lockState(lk); err != nil {
			return err
		}
	}
	return r.leaks()
}

func (r *run) lockState(lk *lockM) error {
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	switch lk.kind {
	case "rlock", "fairlock":
		want := map[string]int64{}
		for _, h := range lk.handles {
			if h.count > 0 {
				want[h.owner] += int64(h.count)
			}
		}
		if err := r.hashState(lk.name, want, nil); err != nil {
			return err
		}
		for _, h := range lk.handles {
			if n, err := h.holdCount(ctx); err != nil || int64(n) != want[h.owner] {
				return fmt.Errorf("%s.HoldCount = %d, %v; the model %d", h.label, n, err, want[h.owner])
			}
		}
		if lk.kind == "fairlock" {
			return r.absent(0, derived(keys.FairQueuePrefix, "f"), derived(keys.FairHeartbeatPrefix, "f"))
		}
	case "rwlock":
		want, extra := map[string]int64{}, map[string]string{}
		for _, h := range lk.handles {
			if h.count == 0 {
				continue
			}
			if h.side == exclusive {
				want[h.owner+":write"] += int64(h.count)
				extra["mode"] = "write"
			} else {
				want[h.owner] += int64(h.count)
				if extra["mode"] == "" {
					extra["mode"] = "read"
				}
			}
		}
		if err := r.hashState(lk.name, want, extra); err != nil {
			return err
		}
		for _, h := range lk.handles {
			if h.side != read || h.lost || h.peer.lost {
				continue
			}
			// A lost read hold's timeout key is left to expire by itself.
			stale := time.Since(lk.lostAt) < lease+time.Second
			tk, err := r.rawOn(0, "KEYS", "{rw}:"+h.owner+":rwlock_timeout:*").AsStrSlice()
			if err != nil || len(tk) < h.count || (len(tk) > h.count && !stale) {
				return fmt.Errorf("%s: %d read hold(s) in the model, timeout keys %v (%v)", h.label, h.count, tk, err)
			}
		}
		return r.absent(0, derived(keys.RWWritersPrefix, "rw"))
	case "multilock":
		if lk.uncertain() {
			return nil
		}
		want := []map[string]int64{{}, {}}
		for _, h := range lk.handles {
			if h.count > 0 {
				for i, c := range h.comps {
					want[i][c.owner] = int64(h.count)
				}
			}
		}
		for i, key := range lk.keys {
			if err := r.hashState(key, want[i], nil); err != nil {
				return err
			}
		}
		return r.absent(0, derived(keys.FairQueuePrefix, "{m}:b"), derived(keys.FairHeartbeatPrefix, "{m}:b"))
	case "semaphore":
		s := lk.handles[0].sem
		used, ids := 0, []string{}
		for _, h := range lk.handles {
			if h.count > 0 {
				used += h.count
				ids = append(ids, h.p.ID())
			}
		}
		avail, err := s.Available(ctx)
		if err != nil || avail != semCap-used {
			return fmt.Errorf("semaphore: Available = %d, %v; the model %d", avail, err, semCap-used)
		}
		holders, err := s.Holders(ctx)
		if err != nil {
			return fmt.Errorf("semaphore: Holders: %w", err)
		}
		got := []string{}
		for _, hd := range holders {
			got = append(got, hd.ID)
		}
		sort.Strings(got)
		sort.Strings(ids)
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			return fmt.Errorf("semaphore: holders %v, the model %v", got, ids)
		}
		return r.absent(0, derived(keys.SemQueuePrefix, "sem"), derived(keys.SemHeartbeatPrefix, "sem"))
	case "redlock":
		if !r.holds(lk) {
			for i := range 3 {
				if err := r.absent(i, "rl"); err != nil {
					return fmt.Errorf("redlock: free in the model: %w", err)
				}
			}
			return nil
		}
		// A quorum holds it (a node slower than the node timeout may have
		// been left out of the grant), and no node has another holder.
		holding := 0
		for i := range 3 {
			v, err := r.rawOn(i, "GET", "rl").ToString()
			pttl, _ := r.rawOn(i, "PTTL", "rl").AsInt64()
			switch {
			case err == nil && v == lk.redlockVal && pttl > 0:
				holding++
			case err == nil:
				return fmt.Errorf("redlock: node %d has %q (PTTL %d), the holder is %q", i, v, pttl, lk.redlockVal)
			}
		}
		if holding < 2 {
			return fmt.Errorf("redlock: only %d node(s) hold it for %q", holding, lk.redlockVal)
		}
	}
	return nil
}

// leaks fails on a key of server 0 that nothing may leave behind: one
// without an expiry (other than the semaphore's configuration) or one that
// lives for long.
func (r *run) leaks() error {
	all, err := r.rawOn(0, "KEYS", "*").AsStrSlice()
	if err != nil {
		return err
	}
	for _, k := range all {
		if k == "sem" || strings.HasPrefix(k, keys.RedlockTokenPrefix+":") {
			continue
		}
		pttl, _ := r.rawOn(0, "PTTL", k).AsInt64()
		if pttl == -1 || pttl > int64(time.Minute/time.Millisecond) {
			return fmt.Errorf("key %s left with PTTL %d ms", k, pttl)
		}
	}
	return nil
}

// leftovers, once everything is unlocked: only what may stay (tokens,
// the semaphore's configuration and its expiring bookkeeping, keys of
// holds lost earlier that expire by themselves).
func (r *run) leftovers() error {
	for _, lk := range r.locks {
		if lk.kind == "semaphore" {
			continue
		}
		if err := r.absent(0, lk.keys...); err != nil {
			return err
		}
	}
	if err := r.absent(1, "rl"); err != nil {
		return err
	}
	return r.absent(2, "rl")
}

func TestLifecycleModel(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	rapid.Check(t, func(rt *rapid.T) {
		r := e.newRun(rt)
		defer r.teardown()
		rt.Repeat(map[string]func(*rapid.T){
			"lock":   r.lockStep,
			"lock2":  r.lockStep, // twice the weight: holds make every other step interesting
			"unlock": r.unlockStep,
			"shared": r.sharedStep,
			"do":     r.doStep,
			"fault":  r.faultStep,
			"wait":   r.waitStep,
			"":       r.check,
		})
		r.finish(rt)
	})
	t.Logf("model runs took %v", time.Since(start).Round(time.Millisecond))
	var names []string
	for k := range e.stats {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, " %s=%d", k, e.stats[k])
	}
	t.Logf("exercised:%s", b.String())
	for _, k := range []string{"grant rlock", "grant fairlock", "grant rwlock", "grant semaphore", "grant multilock", "grant redlock"} {
		if e.stats[k] == 0 && !testing.Short() {
			t.Errorf("the runs never exercised %q: the model is too weak", k)
		}
	}
}
