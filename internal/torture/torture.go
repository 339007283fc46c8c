// Package torture is the fault harness behind `redisync torture`: workers
// take rlocks on a few names and, inside each hold, update a protected
// resource on a separate, never-faulted Redis, while a nemesis injects one
// class of fault on a seeded schedule. Oracles then check what a lease lock
// can promise:
//
//   - overlap: no two holds of one name overlap in time (monotonic clock,
//     one process), except where a holder was paused past its lease, or had
//     the lock taken away during the hold (its key deleted, an amnesic
//     restart) — those overlaps are expected without fencing, and the fence
//     must catch them;
//   - fencing: the fenced counter rejects every stale write and loses no
//     update (its version equals the writes it accepted), while the
//     unfenced twin shows the damage overlaps do;
//   - leaks: after the run and one lease, no lock key is left, none without
//     expiry, no renewal registered, no subscription held;
//   - liveness: hand-off latency, and calls that outlived their deadline.
//
// Workers are goroutines, each with its own Client and rueidis connection
// (a "process"); a holder pause is an in-process pause hook between the
// acquire and the resource write (the process cannot see its ctx then, as in
// a GC pause).
package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/wakeup"
	"github.com/redisync/redisync/rlock"
)

// Scenarios the nemesis knows (reference/reliability.md §9): holder-pause
// S1, reply-loss S4, partition S5, restart S10, server-pause S11,
// script-flush S15, key-delete S16, cancel S17, pubsub-kill S24.
var Scenarios = []string{"none", "holder-pause", "key-delete", "script-flush", "pubsub-kill", "restart", "cancel",
	"partition", "reply-loss", "server-pause"}

// Config is one run.
type Config struct {
	LockAddr     string        // the Redis the locks live on; "" starts one
	ResourceAddr string        // the protected resource's Redis; "" starts one
	Scenario     string        // one of Scenarios
	Workers      int           // concurrent workers (each its own Client)
	Names        int           // lock names they share
	Duration     time.Duration // how long the workload runs
	Lease        time.Duration // the Clients' watchdog timeout
	Hold         time.Duration // longest critical section
	Seed         uint64
	Events       io.Writer     // JSONL of every hold and fault (nil: none)
	HangAfter    time.Duration // a call returning this long after its deadline is a hang (default 100 ms)
}

func (c *Config) defaults() error {
	if c.Scenario == "" {
		c.Scenario = "none"
	}
	if c.HangAfter <= 0 {
		c.HangAfter = 100 * time.Millisecond
	}
	if !slices.Contains(Scenarios, c.Scenario) {
		return fmt.Errorf("unknown scenario %q (one of %v)", c.Scenario, Scenarios)
	}
	if c.Workers <= 0 || c.Names <= 0 || c.Duration <= 0 || c.Lease < 10*time.Millisecond || c.Hold < 0 {
		return fmt.Errorf("workers, names and duration must be positive, lease at least 10ms, hold not negative")
	}
	return nil
}

// Report is what a run found. The NEVER fields must be zero.
type Report struct {
	Scenario         string   `json:"scenario"`
	Seed             uint64   `json:"seed"`
	Grants           int      `json:"grants"`
	Faults           int      `json:"faults"`
	Overlaps         int      `json:"overlaps"`          // all overlapping pairs
	OverlapsUnpaused int      `json:"overlaps_unpaused"` // NEVER: overlaps with no holder paused past its lease
	FencedAccepted   int      `json:"fenced_accepted"`
	FencedStale      int64    `json:"fenced_stale_rejected"`
	FencedConflicts  int64    `json:"fenced_conflicts"`
	FencedLost       int64    `json:"fenced_lost_updates"`   // NEVER
	StaleAccepted    int      `json:"stale_writes_accepted"` // NEVER: a paused holder's write accepted after a later grant wrote
	PlainLost        int64    `json:"unfenced_lost_updates"`
	Leaks            []string `json:"leaks"` // NEVER
	Hangs            int      `json:"hangs"` // NEVER: calls that outlived their deadline by > 100 ms
	HandoffP50       float64  `json:"handoff_p50_ms"`
	HandoffP99       float64  `json:"handoff_p99_ms"`
	Errors           int      `json:"errors"` // acquire or resource errors (faults cause some)
}

// Violations lists the NEVER results that did not hold.
func (r *Report) Violations() []string {
	var v []string
	if r.OverlapsUnpaused > 0 {
		v = append(v, fmt.Sprintf("%d overlaps without a paused holder", r.OverlapsUnpaused))
	}
	if r.FencedLost > 0 {
		v = append(v, fmt.Sprintf("%d fenced updates lost", r.FencedLost))
	}
	if r.StaleAccepted > 0 {
		v = append(v, fmt.Sprintf("%d stale writes accepted", r.StaleAccepted))
	}
	if len(r.Leaks) > 0 {
		v = append(v, fmt.Sprintf("leaks: %v", r.Leaks))
	}
	if r.Hangs > 0 {
		v = append(v, fmt.Sprintf("%d calls outlived their deadline", r.Hangs))
	}
	return v
}

// hold is one grant as a worker saw it.
type hold struct {
	Kind   string        `json:"kind"` // "hold"
	Name   string        `json:"name"`
	Worker int           `json:"worker"`
	Token  uint64        `json:"token"`
	Enter  time.Duration `json:"enter_ns"` // since the run started (monotonic)
	Exit   time.Duration `json:"exit_ns"`
	Paused bool          `json:"paused"`
	Lost   bool          `json:"lost"`  // the lock was lost during the hold (and the holder told)
	Write  string        `json:"write"` // accepted, stale, conflict, error
}

// Run runs the workload and the nemesis, then the oracles.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	lockSrv, err := server(&cfg.LockAddr)
	if err != nil {
		return nil, err
	}
	if lockSrv != nil {
		defer lockSrv.Kill()
	}
	resSrv, err := server(&cfg.ResourceAddr)
	if err != nil {
		return nil, err
	}
	if resSrv != nil {
		defer resSrv.Kill()
	}
	resRC, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.ResourceAddr}, DisableCache: true})
	if err != nil {
		return nil, err
	}
	defer resRC.Close()
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.LockAddr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	res := resource{rc: resRC}
	prefix := fmt.Sprintf("torture:%d:", cfg.Seed)
	names := make([]string, cfg.Names)
	for i := range names {
		names[i] = prefix + fmt.Sprint(i)
		_ = resRC.Do(ctx, resRC.B().Del().Key("fenced:"+names[i], "plain:"+names[i]).Build()).Error()
	}

	run := &runState{cfg: cfg, start: time.Now(), res: res, names: names, prefix: prefix, events: cfg.Events}
	wctx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	clients := make([]*redisync.Client, cfg.Workers)
	rcs := make([]rueidis.Client, cfg.Workers)
	run.proxies = make([]*proxy, cfg.Workers)
	for i := range clients {
		// Each worker reaches the lock server through a proxy of its own,
		// so that a network fault can hit one worker alone.
		px, err := newProxy(cfg.LockAddr)
		if err != nil {
			return nil, err
		}
		defer px.close()
		run.proxies[i] = px
		rcs[i], err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{px.addr()}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			return nil, err
		}
		defer rcs[i].Close()
		clients[i] = redisync.New(rcs[i], redisync.WithWatchdogTimeout(cfg.Lease), redisync.WithMaxPoll(max(cfg.Lease/4, 10*time.Millisecond)))
	}
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run.worker(wctx, w, clients[w])
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		run.nemesis(wctx, admin, lockSrv)
	}()
	wg.Wait()

	// Quiesce: Clients closed, then one lease for anything left to expire.
	for _, c := range clients {
		_ = c.Close()
	}
	rep := run.check(ctx, admin, clients)
	return rep, nil
}

// server starts a redis-server when *addr is empty.
func server(addr *string) (*redistest.Server, error) {
	if *addr != "" {
		return nil, nil
	}
	s, err := redistest.StartMain()
	if err != nil {
		return nil, err
	}
	*addr = s.Addr()
	return s, nil
}

type runState struct {
	cfg     Config
	start   time.Time
	res     resource
	names   []string
	prefix  string // of every name of this run
	mu      sync.Mutex
	holds   []hold
	faults  int
	errors  int
	hangs   int
	events  io.Writer
	paused  bool // the nemesis asks the next holder to pause (holder-pause)
	proxies []*proxy
	// hits are the faults that took locks away (key deleted, server
	// restarted), by time; name "" hits every name.
	hits []hit
}

type hit struct {
	at   time.Duration
	name string
}

// interferenceSlack widens a hold's window backwards when matching faults:
// its Enter is taken after Lock returned, and on a loaded machine the worker
// may run a few milliseconds after the grant, while the fault already hit it.
const interferenceSlack = 100 * time.Millisecond

// interfered reports whether a fault took h's lock away during h.
func (r *runState) interfered(h hold) bool {
	for _, x := range r.hits {
		if (x.name == "" || x.name == h.Name) && x.at >= h.Enter-interferenceSlack && x.at <= h.Exit {
			return true
		}
	}
	return false
}

func (r *runState) now() time.Duration { return time.Since(r.start) }

func (r *runState) log(v any) {
	if r.events == nil {
		return
	}
	b, _ := json.Marshal(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.events.Write(append(b, '\n'))
}

// takePause reports whether this holder should pause past its lease.
func (r *runState) takePause() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paused
	r.paused = false
	return p
}

// worker runs acquire → read → (maybe pause) → write → release cycles.
func (r *runState) worker(ctx context.Context, w int, c *redisync.Client) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(w)))
	for ctx.Err() == nil {
		name := r.names[rng.IntN(len(r.names))]
		var opts []rlock.Option
		if r.cfg.Scenario == "holder-pause" {
			// A paused process renews nothing: holds in this scenario have a
			// fixed lease, which the pause outlasts.
			opts = append(opts, rlock.WithLease(r.cfg.Lease))
		}
		m := rlock.New(c, name, opts...)
		timeout := 2*r.cfg.Lease + time.Second
		if r.cfg.Scenario == "cancel" && rng.IntN(3) == 0 {
			timeout = time.Duration(rng.IntN(3000)) * time.Microsecond
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		called := time.Now()
		err := m.Lock(actx)
		if late := time.Since(called) - timeout; err != nil && late > r.cfg.HangAfter {
			r.mu.Lock()
			r.hangs++
			r.mu.Unlock()
		}
		cancel()
		if err != nil {
			if ctx.Err() == nil && actx.Err() == nil {
				r.mu.Lock()
				r.errors++
				r.mu.Unlock()
			}
			continue
		}
		h := hold{Kind: "hold", Name: name, Worker: w, Token: m.Token(), Enter: r.now()}
		h.Paused, h.Write = r.critical(ctx, rng, m, name, &h)
		h.Exit = r.now()
		h.Lost = m.Err() != nil
		_ = m.Unlock(context.Background())
		r.mu.Lock()
		r.holds = append(r.holds, h)
		r.mu.Unlock()
		r.log(h)
	}
}

// critical is the critical section: read both counters, work, write both.
func (r *runState) critical(ctx context.Context, rng *rand.Rand, m *rlock.Mutex, name string, h *hold) (bool, string) {
	wctx := context.WithoutCancel(ctx)
	fv, err1 := r.res.readFenced(wctx, name)
	pv, err2 := r.res.readPlain(wctx, name)
	if err1 != nil || err2 != nil {
		return false, "error"
	}
	paused := r.takePause()
	if paused {
		// A GC-like pause of two leases: the holder cannot look at its ctx
		// meanwhile, and the next holder has long written when it resumes.
		time.Sleep(2 * r.cfg.Lease)
	} else if r.cfg.Hold > 0 {
		select {
		case <-time.After(time.Duration(rng.Int64N(int64(r.cfg.Hold) + 1))):
		case <-m.Done(): // lost: a correct holder stops before writing
			return false, "lost"
		}
	}
	if !paused && m.Err() != nil {
		return false, "lost"
	}
	_ = r.res.writePlain(wctx, name, pv+1)
	out, err := r.res.writeFenced(wctx, name, h.Token, m.Owner(), fv)
	if err != nil {
		return paused, "error"
	}
	return paused, [...]string{"accepted", "stale", "conflict"}[out]
}

// nemesis injects the scenario's fault every so often until ctx ends.
func (r *runState) nemesis(ctx context.Context, admin rueidis.Client, lockSrv *redistest.Server) {
	if r.cfg.Scenario == "none" || r.cfg.Scenario == "cancel" {
		return
	}
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 1<<32))
	every := max(r.cfg.Lease, 100*time.Millisecond)
	for {
		wait := every/2 + time.Duration(rng.Int64N(int64(every)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		fault := map[string]any{"kind": "fault", "scenario": r.cfg.Scenario, "at_ns": r.now()}
		switch r.cfg.Scenario {
		case "holder-pause":
			r.mu.Lock()
			r.paused = true
			r.mu.Unlock()
		case "key-delete":
			name := r.names[rng.IntN(len(r.names))]
			at := r.now()
			_ = admin.Do(ctx, admin.B().Del().Key(name).Build()).Error()
			fault["name"] = name
			r.mu.Lock()
			r.hits = append(r.hits, hit{at: at, name: name}, hit{at: r.now(), name: name})
			r.mu.Unlock()
		case "script-flush":
			_ = admin.Do(ctx, admin.B().ScriptFlush().Build()).Error()
		case "pubsub-kill":
			_ = admin.Do(ctx, admin.B().ClientKill().TypePubsub().Build()).Error()
		case "partition", "reply-loss":
			// One worker loses its network (both ways, or only the replies)
			// for longer than a lease (partition) or a moment (reply-loss).
			w := rng.IntN(len(r.proxies))
			mode, d := blackhole, r.cfg.Lease+r.cfg.Lease/2
			if r.cfg.Scenario == "reply-loss" {
				mode, d = dropReplies, 200*time.Millisecond
			}
			fault["worker"] = w
			r.proxies[w].set(mode)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
			if mode == dropReplies {
				r.proxies[w].reset()
			} else {
				r.proxies[w].set(pass)
			}
		case "server-pause":
			if lockSrv == nil {
				return // not ours to pause
			}
			// The server stops for longer than a lease: every hold expires
			// at resume (the server's clock ran on).
			at := r.now()
			lockSrv.Pause()
			select {
			case <-ctx.Done():
			case <-time.After(r.cfg.Lease + r.cfg.Lease/2):
			}
			lockSrv.Resume()
			r.mu.Lock()
			r.hits = append(r.hits, hit{at: at, name: ""}, hit{at: r.now(), name: ""})
			r.mu.Unlock()
		case "restart":
			if lockSrv == nil {
				return // not ours to restart
			}
			at := r.now()
			_ = lockSrv.RestartMain()
			r.mu.Lock()
			r.hits = append(r.hits, hit{at: at, name: ""}, hit{at: r.now(), name: ""})
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.faults++
		r.mu.Unlock()
		r.log(fault)
	}
}

// excused reports whether a hold may overlap another without breaking a
// NEVER result: its holder was paused past its lease, was told it lost the
// lock, or had the lock taken away by a fault during the hold.
func (r *runState) excused(h hold) bool { return h.Paused || h.Lost || r.interfered(h) }

// check runs the oracles.
func (r *runState) check(ctx context.Context, admin rueidis.Client, clients []*redisync.Client) *Report {
	rep := &Report{Scenario: r.cfg.Scenario, Seed: r.cfg.Seed, Grants: len(r.holds), Faults: r.faults, Errors: r.errors, Hangs: r.hangs, Leaks: []string{}}
	byName := map[string][]hold{}
	for _, h := range r.holds {
		byName[h.Name] = append(byName[h.Name], h)
		if h.Write == "accepted" {
			rep.FencedAccepted++
		}
	}
	var handoffs []time.Duration
	for name, hs := range byName {
		sort.Slice(hs, func(i, j int) bool { return hs[i].Enter < hs[j].Enter })
		for i := range hs {
			for j := i + 1; j < len(hs) && hs[j].Enter < hs[i].Exit; j++ {
				rep.Overlaps++
				if !r.excused(hs[i]) && !r.excused(hs[j]) {
					rep.OverlapsUnpaused++
				}
			}
			if i > 0 && hs[i].Enter >= hs[i-1].Exit && hs[i].Worker != hs[i-1].Worker {
				handoffs = append(handoffs, hs[i].Enter-hs[i-1].Exit)
			}
		}
		// A paused holder whose write was accepted although a grant with a
		// higher token had written before it: a stale write accepted.
		for _, h := range hs {
			if !h.Paused || h.Write != "accepted" {
				continue
			}
			for _, o := range hs {
				if o.Token > h.Token && o.Write == "accepted" && o.Exit < h.Exit && o.Enter > h.Enter {
					rep.StaleAccepted++
					break
				}
			}
		}
		ver, stale, conflict, plain, err := r.res.totals(ctx, name)
		if err == nil {
			accepted := int64(0)
			for _, h := range hs {
				if h.Write == "accepted" {
					accepted++
				}
			}
			rep.FencedLost += accepted - ver
			rep.FencedStale += stale
			rep.FencedConflicts += conflict
			rep.PlainLost += int64(len(hs)) - plain
		}
	}
	if len(handoffs) > 0 {
		slices.Sort(handoffs)
		rep.HandoffP50 = float64(handoffs[len(handoffs)/2]) / 1e6
		rep.HandoffP99 = float64(handoffs[len(handoffs)*99/100]) / 1e6
	}
	// Leaks: after the lease (and the subscription linger), nothing of ours
	// may be left: no key, no key without expiry, no renewal, no
	// subscription.
	for _, c := range clients {
		e := engine.FromClient(c)
		if n := e.Watchdog.Len(); n > 0 {
			rep.Leaks = append(rep.Leaks, fmt.Sprintf("%d renewals registered after Close", n))
		}
		if n := e.Hub.Channels(); n > 0 {
			rep.Leaks = append(rep.Leaks, fmt.Sprintf("%d subscriptions after Close", n))
		}
	}
	time.Sleep(r.cfg.Lease + wakeup.Linger)
	for _, name := range r.names {
		pttl, err := admin.Do(ctx, admin.B().Pttl().Key(name).Build()).AsInt64()
		if err == nil && pttl != -2 {
			rep.Leaks = append(rep.Leaks, fmt.Sprintf("%s left with PTTL %d", name, pttl))
		}
	}
	// The workers' connections are still open here (closed when Run
	// returns), so a channel still subscribed means the hub kept it.
	channels, err := admin.Do(ctx, admin.B().PubsubChannels().Pattern("*"+r.prefix+"*").Build()).AsStrSlice()
	if err == nil && len(channels) > 0 {
		rep.Leaks = append(rep.Leaks, fmt.Sprintf("channels still subscribed: %v", channels))
	}
	return rep
}
