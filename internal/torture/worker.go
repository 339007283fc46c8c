package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
)

// worker is one simulated process: its own Clients, each over its own
// rueidis connection through a proxy of its own (one per lock server), so
// that the nemesis can cut or crash one worker alone.
type worker struct {
	r           *runState
	id          int
	proxies     []*proxy // in the parent: one per lock server
	addrs       []string // where the worker's process connects: its proxies
	incarnation int      // child processes: how many ran before this one

	// The process, rebuilt after a crash. mu guards it against the
	// nemesis, which crashes a worker that is waiting from outside.
	mu      sync.Mutex
	rcs     []rueidis.Client
	clients []*redisync.Client
	k       contender
	proc    *childProc // with Config.Child: the child process running now

	waiting   atomic.Bool // inside an acquire
	crashed   atomic.Bool // the nemesis crashed it while it waited
	crashNext atomic.Bool // crash at the next hold, in the critical section
}

func (r *runState) newWorker(id int) (*worker, error) {
	w := &worker{r: r, id: id}
	for _, a := range r.cfg.LockAddrs {
		if r.cfg.Cluster != nil {
			break // no proxies: a Cluster client follows the topology
		}
		px, err := newProxy(a)
		if err != nil {
			w.close()
			return nil, err
		}
		w.proxies = append(w.proxies, px)
		w.addrs = append(w.addrs, px.addr())
	}
	if r.cfg.Child != nil {
		return w, nil // its processes connect by themselves
	}
	if err := w.boot(); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// boot starts the worker's process: connections and Clients.
func (w *worker) boot() error {
	cfg := &w.r.cfg
	if cfg.Cluster != nil {
		return w.bootCluster()
	}
	var rcs []rueidis.Client
	var clients []*redisync.Client
	for _, addr := range w.addrs {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			for _, c := range rcs {
				c.Close()
			}
			return err
		}
		rcs = append(rcs, rc)
		clients = append(clients, redisync.New(rc, redisync.WithWatchdogTimeout(cfg.Lease),
			redisync.WithMaxPoll(max(cfg.Lease/4, 10*time.Millisecond))))
	}
	w.mu.Lock()
	w.rcs, w.clients = rcs, clients
	w.k = newContender(cfg, clients, w.r.names)
	w.mu.Unlock()
	return nil
}

// kill ends the process with no clean-up: its connections close first, so
// nothing more reaches Redis (no release, no leaving a queue), then its
// Clients stop their renewals and goroutines.
func (w *worker) kill() {
	w.mu.Lock()
	rcs, clients := w.rcs, w.clients
	w.rcs, w.clients = nil, nil
	w.mu.Unlock()
	for _, rc := range rcs {
		rc.Close()
	}
	for _, c := range clients {
		_ = c.Close()
	}
}

// close shuts the worker down at the end of the run: its Clients (which
// report their renewals and subscriptions for the leak oracle first) stay
// readable; the connections and proxies close.
func (w *worker) close() {
	w.mu.Lock()
	rcs, clients := w.rcs, w.clients
	w.mu.Unlock()
	for _, c := range clients {
		_ = c.Close()
	}
	for _, rc := range rcs {
		rc.Close()
	}
	for _, px := range w.proxies {
		px.close()
	}
}

func (w *worker) contender() contender {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.k
}

// run does acquire → critical section → release until ctx ends. In the
// shared-handle scenario a twin goroutine does the same over the same
// handles, as a second holder (see lifecycle.go).
func (w *worker) run(ctx context.Context) {
	if w.r.cfg.Scenario != "shared-handle" {
		w.loop(ctx, w.id)
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.loop(ctx, w.id+twinOffset)
	}()
	w.loop(ctx, w.id)
	wg.Wait()
}

// loop is run's acquire → critical section → release, for holder id.
func (w *worker) loop(ctx context.Context, id int) {
	r, cfg := w.r, &w.r.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(id)<<16|uint64(w.incarnation)))
	grants := 0
	for ctx.Err() == nil {
		if w.crashed.Swap(false) {
			if err := w.boot(); err != nil {
				r.count(&r.errors)
				return
			}
		}
		timeout := 2*cfg.Lease + time.Second
		if cfg.Scenario == "cancel" && rng.IntN(3) == 0 {
			timeout = time.Duration(rng.IntN(3000)) * time.Microsecond
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		call := r.now()
		w.waiting.Store(true)
		g, err := w.contender().acquire(actx, rng)
		w.waiting.Store(false)
		if late := r.now() - call - timeout; err != nil && late > cfg.HangAfter && !w.crashed.Load() {
			r.count(&r.hangs)
		}
		// Whether the call used up its deadline, read before cancel (after
		// it, every failed call looked timed out and no error was counted).
		timedOut := actx.Err() != nil
		cancel()
		if err != nil {
			w.failed(ctx, timedOut, g, err)
			continue
		}
		grants++
		r.entered(id, g.names, g.mode, g.id, call)
		h := hold{Kind: "hold", Names: g.names, Tokens: g.tokens, Mode: g.mode, ID: g.id, Worker: id,
			Owner: fmt.Sprintf("w%d.%d-g%d", id, w.incarnation, grants), Call: call, Enter: r.now()}
		if cfg.Scenario == "panic" {
			released := w.criticalInDo(ctx, rng, g, &h)
			w.doubleRelease(rng, g, released)
			continue
		}
		w.critical(ctx, rng, g, &h)
		if h.Crashed {
			r.record(h)
			continue
		}
		// Recorded before the release: a child process killed after this
		// line is known to have left the section (its lock just expires).
		w.exitHold(g, &h)
		w.doubleRelease(rng, g, w.release(rng, g))
	}
}

// exitHold closes h's record just before its release: a hold that ended by
// its holder's choice, or by a loss it was told of.
func (w *worker) exitHold(g *grant, h *hold) {
	h.Exit = w.r.now()
	if h.LostAt == 0 && g.err() != nil {
		h.LostAt = h.Exit
	}
	w.r.record(*h)
}

// doubleRelease sometimes releases g, released once already, a second time:
// that must be turned away. Not where a twin shares the handle: like a
// sync.Mutex's, a shared handle's Unlock releases whichever hold the handle
// has now, which may be the twin's.
func (w *worker) doubleRelease(rng *rand.Rand, g *grant, released bool) {
	if w.r.cfg.Scenario == "shared-handle" {
		return
	}
	if released && rng.IntN(8) == 0 {
		if err := g.release(context.Background()); err == nil {
			w.r.count(&w.r.doubles)
		}
	}
}

// failed accounts for an acquire that returned err.
func (w *worker) failed(ctx context.Context, timedOut bool, g *grant, err error) {
	r := w.r
	switch {
	case w.crashed.Load():
		return // the nemesis killed it while it waited
	case ctx.Err() != nil:
	case timedOut:
		if r.cfg.Scenario != "cancel" {
			r.count(&r.timeouts)
		}
	case errors.Is(err, redisync.ErrClosed):
	default:
		r.count(&r.errors)
	}
	// All or nothing: whatever made a multilock fail, no component of it
	// may stay held.
	if g != nil && g.leftover != nil && !w.nothingLeft(g) {
		r.count(&r.partial)
	}
}

// nothingLeft reports whether a failed acquire holds nothing in Redis. A
// component acquire cut short by ctx is settled by a Client task (one round
// trip after the call returned), so this waits for that, boundedly.
func (w *worker) nothingLeft(g *grant) bool {
	deadline := time.Now().Add(3 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := g.leftover(ctx)
		cancel()
		if err == nil && n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return err != nil // unreachable Redis is no evidence either way
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// critical is the critical section: read the counters, work, write them.
// Readers and permit holders only work; exclusive holders update every
// name they hold.
func (w *worker) critical(ctx context.Context, rng *rand.Rand, g *grant, h *hold) {
	r, cfg := w.r, &w.r.cfg
	wctx := context.WithoutCancel(ctx)
	writes := g.mode == modeExclusive
	var fv, pv []int64
	if writes {
		for _, name := range g.names {
			f, err1 := r.res.readFenced(wctx, name)
			p, err2 := r.res.readPlain(wctx, name)
			if err1 != nil || err2 != nil {
				h.Write = []string{"error"}
				return
			}
			fv, pv = append(fv, f), append(pv, p)
		}
	}
	if w.crashNext.Swap(false) {
		// The process dies mid-hold: it writes nothing more, anywhere.
		h.Crashed, h.Exit = true, r.now()
		w.kill()
		r.mu.Lock()
		r.crashes = append(r.crashes, crash{at: h.Exit, names: g.names})
		r.mu.Unlock()
		r.watchReclaim(*h)
		w.crashed.Store(true)
		return
	}
	if r.takePause() {
		// A GC-like pause of two leases: the holder cannot look at its ctx
		// meanwhile, and the next holder has long written when it resumes.
		h.Paused = true
		time.Sleep(2 * cfg.Lease)
	} else if cfg.Hold > 0 {
		select {
		case <-time.After(time.Duration(rng.Int64N(int64(cfg.Hold) + 1))):
		case <-g.done: // lost: a correct holder stops before writing
			h.LostAt = r.now()
			return
		}
	}
	if !h.Paused && g.err() != nil {
		h.LostAt = r.now()
		return
	}
	if !writes {
		return
	}
	h.Wrote = true
	for i, name := range g.names {
		_ = r.res.writePlain(wctx, name, pv[i]+1)
		out, ver, err := r.res.writeFenced(wctx, name, g.tokens[i], h.Owner, fv[i])
		if err != nil {
			h.Write = append(h.Write, "error")
		} else {
			h.Write = append(h.Write, [...]string{"accepted", "stale", "conflict"}[out])
		}
		h.Vers = append(h.Vers, ver)
	}
}
