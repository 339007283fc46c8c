package lifecycle

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redisync/redisync"
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
//     stay held and renewed — but for a hold no renewal confirmed within
//     its deadline on a machine seen loaded, which the watchdog reports lost
//     by its documented rule (lapsed, checks_test.go);
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
	// lease is the watchdog timeout of every Client. A hold survives a
	// stall of two thirds of it (renewals every third); with 1 s, holds no
	// fault touched were lost in 3 of 10 runs beside a second make test
	// (load 20-47 on two cores, where a bare -race loop stalls for over
	// 300 ms), which the model rightly calls a defect. Every bound below is
	// a fraction or a multiple of it.
	lease = 2 * time.Second
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
	// An Unlock during a short pause (shorter than the holds' slack, so
	// nothing else is lost) waits unlockWait for a reply that comes after
	// unlockPause.
	unlockWait  = 100 * time.Millisecond
	unlockPause = 300 * time.Millisecond
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

	count     int       // holds of this handle (the model)
	token     uint64    // the token seen at grant
	grantedAt time.Time // when the last Lock of the hold returned (its lease was confirmed before)
	lost      bool      // lost and not yet unlocked
	wasLost   bool      // the last hold ended by a loss
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
	h.grantedAt = time.Now()
	h.wasLost = false
	r.e.stats[outcomeNames[o]+" "+h.lk.kind]++
	if o == oNest && from != h {
		r.e.stats["nest on the owner's other handle"]++
	}
}

var outcomeNames = []string{"skip", "grant", "nest", "busy", "self-held", "non-reentrant"}

func TestLifecycleModel(t *testing.T) {
	n := shards()
	start := time.Now()
	var mu sync.Mutex
	stats := map[string]int{}
	// Cleanup runs once every shard has ended: the totals are checked then.
	t.Cleanup(func() {
		t.Logf("%d shards of %d model runs took %v", n, checksPerShard(), time.Since(start).Round(time.Millisecond))
		var names []string
		for k := range stats {
			names = append(names, k)
		}
		sort.Strings(names)
		var b strings.Builder
		for _, k := range names {
			fmt.Fprintf(&b, " %s=%d", k, stats[k])
		}
		t.Logf("exercised:%s", b.String())
		if t.Failed() {
			return // a failed shard may have stopped before it exercised much
		}
		for _, k := range []string{"grant rlock", "grant fairlock", "grant rwlock", "grant semaphore", "grant multilock", "grant redlock"} {
			if stats[k] == 0 && !testing.Short() {
				t.Errorf("the runs never exercised %q: the model is too weak", k)
			}
		}
	})
	for i := range n {
		// Each shard is its own model on its own servers, with its own
		// random seed (rapid draws one per Check); the shards mostly wait
		// on leases and servers, so they share two cores well.
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			if n > 1 {
				t.Parallel()
			}
			e := newEnv(t)
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
			mu.Lock()
			defer mu.Unlock()
			for k, v := range e.stats {
				stats[k] += v
			}
		})
	}
}
