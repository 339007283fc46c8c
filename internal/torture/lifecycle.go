package torture

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redisync/redisync"
	keyspec "github.com/redisync/redisync/internal/keys"
)

// The lifecycle scenarios inject no server fault: the fault is the careless
// caller. Each one is a habit that once left a lock held forever or let two
// holders in:
//
//   - cancel-unlock: half of the releases are made with a context that is
//     already cancelled (the everyday `defer mu.Unlock(ctx)` with a request
//     context); the release must still reach Redis;
//   - panic: the critical section runs inside redisync.Do and a third of
//     them panic (the worker recovers); Do must still release;
//   - shared-owner: each hold is taken twice, by two handles with one owner
//     id (WithOwner) — a nested hold — and released by both; the lock must
//     then be free;
//   - shared-handle: each worker runs a twin goroutine that shares its lock
//     handles (one handle per name, as a program shares a sync.Mutex); the
//     two must exclude each other like any two holders.
//
// A lock left held by nobody is a NEVER result in these scenarios
// ("stuck"): Lock calls that use up their generous deadline, or lock keys
// still in Redis once every worker has stopped (each released what it
// held) and the Clients are still open — so still renewing what they
// wrongly believe someone holds.
var lifecycleScenarios = []string{"cancel-unlock", "panic", "shared-owner", "shared-handle"}

// isLifecycle reports whether scenario is one of lifecycleScenarios.
func isLifecycle(scenario string) bool { return slices.Contains(lifecycleScenarios, scenario) }

// lifecycleApplies reports whether a lifecycle scenario can run with
// primitive: only rlock, fairlock and rwlock take an owner id, and a
// semaphore has no handle that holds (each Acquire returns its own Permit).
func lifecycleApplies(primitive, scenario string) bool {
	switch scenario {
	case "shared-owner":
		return primitive == "rlock" || primitive == "fairlock" || primitive == "rwlock"
	case "shared-handle":
		return primitive != "semaphore"
	}
	return true
}

// twinOffset tells a shared-handle twin's holds from its worker's in the
// history (the oracles treat them as two holders).
const twinOffset = 1000

// release ends g's hold the way the scenario's caller would, and reports
// whether the release was made (so that a second one must be refused).
func (w *worker) release(rng *rand.Rand, g *grant) bool {
	if w.r.cfg.Scenario == "cancel-unlock" && rng.IntN(2) == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := g.release(ctx)
		// The hold ended locally and the release goes on in the background.
		return err == nil || errors.Is(err, context.Canceled)
	}
	return g.release(context.Background()) == nil
}

// errPanicked is what a recovered critical-section panic becomes.
var errPanicked = errors.New("torture: critical section panicked")

// criticalInDo runs the critical section inside redisync.Do over the held
// grant, panicking after it a third of the time; Do must release either
// way. It reports whether the release was made.
func (w *worker) criticalInDo(ctx context.Context, rng *rand.Rand, g *grant, h *hold) (released bool) {
	panics := rng.IntN(3) == 0
	defer func() {
		if p := recover(); p != nil && p != errPanicked {
			panic(p)
		}
	}()
	l := heldLocker{g: g, exit: func() { w.exitHold(g, h) }}
	err := redisync.Do(context.WithoutCancel(ctx), l, func(context.Context) error {
		w.critical(ctx, rng, g, h)
		if panics {
			panic(errPanicked)
		}
		return nil
	})
	return err == nil
}

// heldLocker presents a grant that is already held as a redisync.Locker,
// so that redisync.Do can run a critical section under it: Lock does
// nothing, Unlock closes the hold's record (exit) and releases, the rest is
// the grant's.
type heldLocker struct {
	g    *grant
	exit func()
}

func (l heldLocker) Lock(context.Context) error            { return nil }
func (l heldLocker) TryLock(context.Context) (bool, error) { return true, nil }
func (l heldLocker) Token() uint64                         { return l.g.tokens[0] }
func (l heldLocker) Done() <-chan struct{}                 { return l.g.done }
func (l heldLocker) Err() error                            { return l.g.err() }

func (l heldLocker) Unlock(ctx context.Context) error {
	l.exit()
	return l.g.release(ctx)
}

// stuckWithin bounds how long releases handed to the background after the
// workers stopped may take to land (engine.CompensateTimeout, and margin).
const stuckWithin = 3 * time.Second

// stuck counts the run's lock keys still in Redis after every worker
// stopped, waiting up to stuckWithin for background releases to land. A
// semaphore's configuration (its own key) and redlock's fencing counters
// are meant to stay.
func (r *runState) stuck(ctx context.Context) int {
	deadline := time.Now().Add(stuckWithin)
	for {
		left := 0
		for _, admin := range r.admins {
			keys, err := admin.Do(ctx, admin.B().Keys().Pattern("*"+r.prefix+"*").Build()).AsStrSlice()
			if err != nil {
				continue // an unreachable server is no evidence either way
			}
			for _, k := range keys {
				// Last-token keys outlive a release by design (lib.lua
				// keep_token: 10 s past the token), so they are not stuck.
				if strings.HasPrefix(k, "redisync_redlock_token:") || strings.HasPrefix(k, keyspec.LockTokenPrefix+":") ||
					(r.cfg.Primitive == "semaphore" && slices.Contains(r.names, k)) {
					continue
				}
				left++
			}
		}
		if left == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}
