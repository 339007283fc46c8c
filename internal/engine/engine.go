// Package engine is the machinery a redisync.Client shares with the lock
// packages: the rueidis client, the client id, the wake-up hub, the watchdog,
// the settings, and the waiting loop. The root package owns it; lock packages
// reach it with FromClient.
package engine

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/obs"
	"github.com/redisync/redisync/internal/scripts"
	"github.com/redisync/redisync/internal/wakeup"
	"github.com/redisync/redisync/internal/watchdog"
)

// Config is the resolved configuration of a Client.
type Config struct {
	WatchdogTimeout time.Duration
	MaxPoll         time.Duration
	Logger          *slog.Logger // nil: no logging
	Observer        obs.Observer // nil: no events
	// WaitReplicas > 0: every write waits (WAIT, same connection) for that
	// many replicas, for at most WaitTimeout.
	WaitReplicas int
	WaitTimeout  time.Duration
	// HolderInfo is what acquires record in the holder-info hash (the
	// payload of redisync.HolderInfo); "": record nothing.
	HolderInfo string
}

// Engine is the shared state behind one redisync.Client.
type Engine struct {
	RC       rueidis.Client
	ID       string // client uuid
	Cluster  bool   // the deployment is a Redis Cluster
	Publish  string // "publish", or "spublish" on a Cluster
	Config   Config
	Hub      *wakeup.Hub
	Watchdog *watchdog.Watchdog
	// LockRenewer renews holds in the lock layout (rlock, fairlock: hash
	// field <owner> = count); RWLockRenewer renews rwlock read and write holds.
	LockRenewer, RWLockRenewer *BatchRenewer
	// SemRenewer renews semaphore permits.
	SemRenewer *BatchRenewer

	// Ext holds per-Client state of lock packages (redlock's view of this
	// node), keyed by a package's own key type.
	Ext sync.Map

	// Preflight, when set, runs before an acquisition's first attempt
	// (Acquire, TryOnce); its error ends the acquisition, wrapped as an
	// attempt's would be. The root sets it for its eviction check.
	Preflight func(ctx context.Context, target obs.Target) error

	seq       atomic.Uint64
	tasks     taskGroup // background work the Client owns (Settle)
	closed    chan struct{}
	closeOnce sync.Once
	// abandon ends, with cause ErrGivenUp, when Close gives up the tasks
	// left: every context of a task (Detach, and the methods Undo, Background
	// and Own) ends with it. It stays ended until the last task running then
	// has exited — a given-up task that goes on to take a handle's op lock
	// and binds a new context finds it ended too, and returns at once — and
	// then a fresh one takes its place, for work after Close (an Unlock that
	// cleans up a hold Close reported lost, a redlock release on the other
	// nodes).
	abandonMu   sync.Mutex
	abandon     context.Context
	abandonTask context.CancelCauseFunc
	givenUp     bool      // abandon ended; a fresh one comes when no task is left
	detached    *detached // the live contexts of Detach and Settle, which end with abandon
}

// ErrGivenUp is the cause of a task's context that Close gave up: it
// matches errs.ErrClosed.
var ErrGivenUp = errs.Join(errs.ErrClosed, errors.New("redisync: given up by Close before Redis answered"))

// Cause returns ErrGivenUp in place of err when err came back because
// Close gave up ctx (a context of Detach, Undo, Background or Own): the
// caller's own ctx did not end, and context.Canceled would say it did.
// Otherwise it returns err.
func Cause(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && causeOf(ctx) == ErrGivenUp {
		return ErrGivenUp
	}
	return err
}

// causeOf is context.Cause(ctx), which also sees the cause of a detached
// context (and of those derived from it).
func causeOf(ctx context.Context) error {
	if c, ok := ctx.Value(causeKey{}).(error); ok {
		return c
	}
	return context.Cause(ctx)
}

// New builds the engine for rc. It does no I/O.
func New(rc rueidis.Client, cfg Config) *Engine {
	e := &Engine{
		RC:      rc,
		ID:      uuid.NewString(),
		Cluster: rc.Mode() == rueidis.ClientModeCluster,
		Publish: "publish",
		Config:  cfg,
		closed:  make(chan struct{}),
	}
	e.abandon, e.abandonTask = context.WithCancelCause(context.Background())
	if e.Cluster {
		e.Publish = "spublish"
	}
	if cfg.WaitReplicas > 0 {
		e.RC = &replicated{Client: rc, n: int64(cfg.WaitReplicas), timeout: cfg.WaitTimeout, cluster: e.Cluster}
		rc = e.RC
	}
	e.Hub = wakeup.New(rc, e.Cluster, min(cfg.MaxPoll, 100*time.Millisecond), cfg.Logger)
	e.Watchdog = watchdog.New(errs.LostOnClose)
	e.LockRenewer = &BatchRenewer{e: e, script: scripts.LockRenew, layout: "lock"}
	e.RWLockRenewer = &BatchRenewer{e: e, script: scripts.RWLockRenew, layout: "rwlock"}
	e.SemRenewer = &BatchRenewer{e: e, script: scripts.SemRenew.WithHead(keys.SemHoldersPrefix, keys.SemPermitsPrefix), layout: "semaphore"}
	return e
}

// Observe reports ev to the Client's Observer, if any, and logs losses and
// failed renewals at Warn when the Client has a logger.
func (e *Engine) Observe(ev obs.Event) {
	if l := e.Config.Logger; l != nil {
		switch ev.Kind {
		case obs.Lost:
			l.Warn("redisync: hold lost", "primitive", ev.Primitive, "name", ev.Name, "held", ev.Held, "cause", ev.Err)
		case obs.RenewFailed:
			l.Warn("redisync: renewal failed, retrying until the leases run out", "layout", ev.Primitive, "holds", ev.Count, "err", ev.Err)
		}
	}
	if o := e.Config.Observer; o != nil {
		o.Observe(ev)
	}
}

// NewOwner draws an owner id "<client uuid>:<sequence>", the shape of
// Redisson's "<uuid>:<thread id>", unique for the life of the Client.
func (e *Engine) NewOwner() string {
	return e.ID + ":" + strconv.FormatUint(e.seq.Add(1), 10)
}

// NewOwnerAfter draws an owner id as NewOwner does and returns it with
// prefix+id, the second sharing the first's bytes: one allocation for a
// semaphore permit's id and its waiter channel.
func (e *Engine) NewOwnerAfter(prefix string) (joined, id string) {
	var seq [20]byte
	joined = prefix + e.ID + ":" + string(strconv.AppendUint(seq[:0], e.seq.Add(1), 10))
	return joined, joined[len(prefix):]
}

// Closed is closed when the Client is closed.
func (e *Engine) Closed() <-chan struct{} { return e.closed }

// IsClosed reports whether the Client was closed.
func (e *Engine) IsClosed() bool {
	select {
	case <-e.closed:
		return true
	default:
		return false
	}
}

// CloseTimeout bounds how long Close waits for the Client's tasks (releases
// and undos whose callers stopped waiting): until abandonGrace before it
// they run on; then the ones left are given up (their contexts end) and
// return within abandonGrace.
const CloseTimeout = CompensateTimeout

// abandonGrace is how long a given-up task has to return. It returns at
// once unless it is inside a rueidis call that does not watch its ctx (a
// connection being opened to a server that does not answer: rueidis's dial
// timeout bounds it); Close does not wait for such a task past the grace.
const abandonGrace = 250 * time.Millisecond

// Close stops the watchdog (holds are told they were lost) and the hub, and
// waits for their goroutines and for the Client's tasks, for at most
// CloseTimeout (see there). The hub shuts down as one of the tasks: its
// receivers' UNSUBSCRIBE waits up to a second for a server that does not
// answer, and that second runs inside Close's bound, not before it. It is
// idempotent.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		close(e.closed)
		e.Watchdog.Close()
		e.Go(e.Hub.Close)
		if !e.tasks.waitFor(CloseTimeout - abandonGrace) {
			e.abandonMu.Lock()
			e.abandonTask(ErrGivenUp)
			e.giveUpDetached()
			e.givenUp = true
			e.abandonMu.Unlock()
			e.tasks.waitFor(abandonGrace)
			e.renewAbandon()
		}
	})
}

// renewAbandon puts a fresh abandon context in place once Close has given
// up its tasks and none of them is left.
func (e *Engine) renewAbandon() {
	e.abandonMu.Lock()
	defer e.abandonMu.Unlock()
	if e.givenUp && e.tasks.idle() {
		e.givenUp = false
		e.abandon, e.abandonTask = context.WithCancelCause(context.Background())
	}
}

var fromClient func(any) *Engine

// Register is called once by the root package so that FromClient can reach
// a Client's engine without the root exporting it.
func Register(f func(any) *Engine) { fromClient = f }

// FromClient returns the engine of a *redisync.Client. It panics with a clear
// message on a nil client.
func FromClient(c any) *Engine {
	e := fromClient(c)
	if e == nil {
		panic("redisync: nil *redisync.Client")
	}
	return e
}

// CompensateTimeout bounds one send of the owner-checked release sent after
// a cancelled acquire whose outcome is unknown (Persist sends it again).
const CompensateTimeout = 2 * time.Second

// UndoWait bounds how long a call whose ctx has ended waits for the undo
// of what it started (a grant given back, a queue left, permits returned)
// before it returns: within that bound the undo has landed when the call
// returns; past it (a stalled or unreachable server) a Client task
// finishes it, sending it again until the server answers (Persist).
const UndoWait = 250 * time.Millisecond

// Background returns a context for cleanup that must run even though ctx
// ended, bounded by CompensateTimeout.
func Background(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CompensateTimeout)
}

// Undo returns a context for undoing, after ctx ended, what the caller will
// not be told about — the rollback of an acquisition or of a multilock's
// round, a waiter leaving a queue or withdrawing its claim, a release sent
// again after its caller has gone: Background's bound, and no WAIT after
// its scripts (a replicated Client leaves it off). Nobody reads a replica's
// acknowledgement of an undo, and a WAIT behind a lagging replica holds
// back the undo's own reply: the caller waited for it (a cancelled Lock
// returned 1.5 s late behind a stopped replica, its place in the queue kept
// for the first second), and a NOSCRIPT came back only when the WAIT ended,
// leaving the EVAL that runs the undo only what was left of the bound (a
// release never ran, and the lock stayed held for its lease). Background
// itself keeps its WAIT: Redlock's acquire goes with it, and a grant no
// replica acknowledged must not count towards its quorum.
func Undo(ctx context.Context) (context.Context, context.CancelFunc) {
	bctx, cancel := Background(ctx)
	return markNoWait(bctx), cancel
}

// Background is Background for a Client task: its context ends also when
// Close gives up the tasks left.
func (e *Engine) Background(ctx context.Context) (context.Context, context.CancelFunc) {
	return e.bound(Background(ctx))
}

// Undo is Undo for a Client task: its context ends also when Close gives
// up the tasks left.
func (e *Engine) Undo(ctx context.Context) (context.Context, context.CancelFunc) {
	return e.bound(Undo(ctx))
}

// bound makes ctx (with its cancel) end also when Close gives up its
// tasks, with cause ErrGivenUp (see Cause).
func (e *Engine) bound(ctx context.Context, cancel context.CancelFunc) (context.Context, context.CancelFunc) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	e.abandonMu.Lock()
	abandon := e.abandon
	stop := context.AfterFunc(abandon, func() { cancelCause(context.Cause(abandon)) })
	e.abandonMu.Unlock()
	return ctx, func() {
		stop()
		cancelCause(nil)
		cancel()
	}
}

// Own runs f on the calling goroutine as a task the Client owns, on a
// context with ctx's values that ends only when Close gives up its tasks:
// for work whose ctx cannot end (a call made with context.Background(), or
// the context.WithoutCancel of an Unlock deferred), which Close must still
// reach — it waits for f for at most CloseTimeout, and then f's round trip
// ends with ErrGivenUp (see Cause). The context is a detached one (see
// Detach), which the engine's list of them reaches on Close: with reuse it
// is reused once f returns, so an Unlock or Lock with such a ctx costs no
// context of its own — only for f that is done with it when it returns
// (nothing it started goes on using it, or a context derived from it).
func (e *Engine) Own(ctx context.Context, reuse bool, f func(context.Context)) {
	e.tasks.add()
	defer e.taskDone()
	d := e.detach(ctx, false, reuse)
	defer d.stop()
	f(d)
}

// HoldCount reads an owner's hold count: the integer in field of the hash
// key, 0 when either is absent.
func (e *Engine) HoldCount(ctx context.Context, key, field string) (int, error) {
	n, err := e.RC.Do(ctx, e.RC.B().Hget().Key(key).Field(field).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return int(n), err
}

// Go runs f as a task the Client owns: Close waits for it (for at most
// CloseTimeout, then it is given up: its Detach, Undo and Background
// contexts end), also when it was started while Close was waiting (only a
// task started after Close returned runs unawaited; every task is
// bounded). Tasks do bounded cleanup (undoing
// a grant nobody wants) that a caller whose ctx ended should not wait for.
func (e *Engine) Go(f func()) {
	e.tasks.add()
	go func() {
		defer e.taskDone()
		f()
	}()
}

// taskDone counts a task out, and renews the abandon context when it was
// the last of the tasks Close gave up.
func (e *Engine) taskDone() {
	e.tasks.done()
	e.abandonMu.Lock()
	givenUp := e.givenUp
	e.abandonMu.Unlock()
	if givenUp {
		e.renewAbandon()
	}
}

// Detach returns a context for work that must outlive ctx (an acquire in
// flight, a release the caller stopped waiting for): ctx's end does not
// cancel it, and CompensateTimeout after ctx ends it is cancelled, so the
// work stays bounded; Close giving up its tasks cancels it too. While ctx
// is alive nothing else bounds it: a live caller must never see an internal
// deadline as its own context.DeadlineExceeded. The CancelFunc must be
// called when the work is done.
func (e *Engine) Detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d := e.detach(ctx, true, false)
	return d, d.stop
}

// Linger returns a context that ctx's end does not cancel: it ends d after
// ctx ends (at once if d <= 0), or when the CancelFunc is called, which
// must be called when the work is done. A ctx that cannot end gives one
// that ends only by the CancelFunc.
func Linger(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if ctx.Done() == nil {
		return dctx, cancel
	}
	var (
		mu    sync.Mutex
		timer *time.Timer
		done  bool
	)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			timer = time.AfterFunc(d, cancel)
		}
	})
	return dctx, func() {
		stop()
		mu.Lock()
		done = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// Settled is a call for a Settler: Call runs it (on a context from
// Detach), Settle undoes what it did when its caller had gone (a Client
// task).
type Settled[T any] interface {
	Call(ctx context.Context) T
	Settle(out T)
}

// A Settler runs a call, an acquisition that must not be abandoned in
// flight (a command given up may still run after the undo sent on another
// connection, and leave an orphan), with a detached context: ctx's end does
// not cancel it, and only bounds it (by CompensateTimeout) once ctx has
// ended. Settle returns the call's result and true — unless ctx ends first
// (a slow or cut network): then it returns false at once and hands the
// result, when it comes, to the call's Settle, which runs as a task the
// Client owns (Close waits for it) and undoes whatever the call did.
//
// A Settler settles one call at a time, again and again (a hold's, under
// its op lock): its channel, goroutine function and context are reused,
// so a settled call costs no allocation of its own. Settle must not be called again before the previous call's Settle
// (if it was handed one) has begun. The zero Settler is ready once Init
// has named its call.
type Settler[T any] struct {
	c     Settled[T]
	reuse bool // the call's contexts are reused (see DetachUnwatched)
	// replied tells that out is the call's result: a channel of no
	// elements costs one allocation, one of T two when T has pointers.
	replied chan struct{}
	out     T
	d       *detached // the call in flight's context
	run     func()    // s.do, made once: starting it costs no closure
}

// Init names the Settler's call; with reuse, its contexts are reused (only
// for a call that is done with its ctx when it returns; see
// DetachUnwatched).
func (s *Settler[T]) Init(c Settled[T], reuse bool) { s.c, s.reuse = c, reuse }

// do runs the call; Settle, or its task, awaits replied and takes out.
func (s *Settler[T]) do() {
	s.out = s.c.Call(s.d)
	s.replied <- struct{}{}
}

// take returns the call's result once replied has told it, and clears
// out (nothing of the call is kept past it).
func (s *Settler[T]) take() T {
	out := s.out
	var zero T
	s.out = zero
	return out
}

// Settle runs the call (see Settler).
func (s *Settler[T]) Settle(e *Engine, ctx context.Context) (T, bool) {
	if ctx.Done() == nil {
		// Nothing else ends it: Close gives it up like a task.
		var out T
		e.Own(ctx, s.reuse, func(octx context.Context) { out = s.c.Call(octx) })
		return out, true
	}
	if s.replied == nil {
		s.replied, s.run = make(chan struct{}, 1), s.do
	}
	// The select below starts d's linger when ctx ends.
	d := e.detach(ctx, false, s.reuse)
	s.d = d
	go s.run()
	select {
	case <-s.replied:
		d.stop()
		return s.take(), true
	case <-ctx.Done():
		d.linger()
	}
	e.Go(func() {
		defer d.stop()
		<-s.replied
		s.c.Settle(s.take())
	})
	var zero T
	return zero, false
}

// Go1 is Go for f(arg): one closure fewer than Go with a closure of
// its own.
func Go1[T any](e *Engine, f func(T), arg T) {
	e.tasks.add()
	go run1(e, f, arg)
}

func run1[T any](e *Engine, f func(T), arg T) {
	defer e.taskDone()
	f(arg)
}
