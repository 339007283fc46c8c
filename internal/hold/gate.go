package hold

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/redisync/redisync/internal/errs"
)

// Gate is the local wait in front of a handle's distributed lock. It makes
// goroutines that share one handle exclude each other as they would around
// one sync.Mutex (or, for the two sides of a read-write handle, one
// sync.RWMutex) before any of them asks Redis.
//
// It exists because a handle is one owner in Redis, and a Redis lock lets
// its owner re-enter: without the gate, a second goroutine calling Lock on a
// held handle would nest into the first one's hold and both would run the
// critical section at once, with no error. Re-entry must be asked for
// (WithReentrant, WithOwner); such handles have no gate. It is never carried
// in a context: goroutines started inside a critical section inherit its
// context and would all re-enter together.
//
// A Lock enters the gate (Enter, bounded by ctx, or TryEnter for TryLock),
// then acquires in Redis, then reports the outcome with Acquired: a failed
// acquire opens the gate again, a granted one keeps it closed until an
// Unlock of the handle calls Exit, from whichever goroutine (as
// sync.Mutex.Unlock may be called by any goroutine). A hold lost in Redis
// keeps the gate closed until its Unlock: the holder must still unlock, and
// that Unlock is where it learns of the loss.
//
// A refusing gate (WithNonReentrant) does not wait: entering it while it is
// taken fails at once with ErrNonReentrant. A wait at the gate also ends,
// with ErrClosed, when the Client is closed: the holder's Unlock may never
// come then.
//
// A nil *Gate is always open: every method succeeds at once and Exit does
// nothing. All methods are safe for concurrent use.
type Gate struct {
	sem    *semaphore.Weighted // shared by the two sides of a read-write gate
	weight int64               // what one entry takes: 1, or all of sem for a writer
	refuse bool                // a taken gate is ErrNonReentrant, not a wait
	closed <-chan struct{}     // closed with the Client; nil: never

	mu   sync.Mutex
	held int64 // entries whose acquire was granted and whose Exit has not come
}

// maxReaders bounds how many goroutines may read through one read gate at
// once; a writer takes all of them. Far more than a process runs.
const maxReaders = 1 << 30

// NewGate returns the gate of an exclusive handle (rlock, fairlock). With
// refuse, entering a taken gate fails with ErrNonReentrant instead of
// waiting. A wait ends with ErrClosed when closed is closed (the Client's
// Closed channel).
func NewGate(refuse bool, closed <-chan struct{}) *Gate {
	return &Gate{sem: semaphore.NewWeighted(1), weight: 1, refuse: refuse, closed: closed}
}

// NewRWGate returns the two gates of a read-write handle, which behave like
// one sync.RWMutex: any number of goroutines may be in through the read
// gate at once, one through the write gate and then nobody else. A waiting
// writer holds back readers that come after it (the entries are served in
// arrival order), so local readers cannot starve a local writer — and, as
// with sync.RWMutex, a goroutine that reads must not enter the read gate
// again while a writer may be waiting.
func NewRWGate(refuse bool, closed <-chan struct{}) (write, read *Gate) {
	sem := semaphore.NewWeighted(maxReaders)
	return &Gate{sem: sem, weight: maxReaders, refuse: refuse, closed: closed},
		&Gate{sem: sem, weight: 1, refuse: refuse, closed: closed}
}

// Enter waits until the gate lets this caller in, or ctx ends. It returns
// nil, ctx.Err() unwrapped (the gate is unchanged), ErrClosed when the
// Client was closed during the wait, or ErrNonReentrant at once when a
// refusing gate is taken. After a nil return the caller must report its
// acquire with Acquired.
func (g *Gate) Enter(ctx context.Context) error {
	if g == nil || g.sem.TryAcquire(g.weight) {
		return nil
	}
	if g.refuse {
		return errs.ErrNonReentrant
	}
	if g.closed == nil {
		return g.sem.Acquire(ctx, g.weight)
	}
	// Wait for the gate, ctx or the Client's end, whichever comes first. The
	// watcher is this call's own and has exited when Enter returns.
	wctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-g.closed:
			cancel()
		case <-wctx.Done():
		}
	}()
	err := g.sem.Acquire(wctx, g.weight)
	cancel()
	<-watched
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return errs.ErrClosed
	}
}

// TryEnter enters the gate if it is open, without waiting: (false, nil)
// when it is taken, or ErrNonReentrant for a refusing gate. After (true,
// nil) the caller must report its acquire with Acquired.
func (g *Gate) TryEnter() (bool, error) {
	if g == nil || g.sem.TryAcquire(g.weight) {
		return true, nil
	}
	if g.refuse {
		return false, errs.ErrNonReentrant
	}
	return false, nil
}

// Acquired reports the outcome of the acquire that followed a successful
// Enter or TryEnter: granted keeps the gate taken until Exit; otherwise the
// gate opens again.
func (g *Gate) Acquired(granted bool) {
	if g == nil {
		return
	}
	if !granted {
		g.sem.Release(g.weight)
		return
	}
	g.mu.Lock()
	g.held++
	g.mu.Unlock()
}

// Exit is called by every Unlock that reached the hold, whatever it
// reported (released, lost, or a release left to finish in the background):
// the hold that came in through the gate has ended locally, so the next
// waiter may go. Without a granted entry it does nothing, so an Unlock that
// pairs with no Lock through the gate (a stray one while a Lock is still in
// flight, or one for a hold a multilock took with a single script) neither
// opens the gate early nor puts it in debt.
func (g *Gate) Exit() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == 0 {
		return
	}
	g.held--
	g.sem.Release(g.weight)
}
