// Package torture is the fault harness behind `redisync-torture`: workers
// take locks of one primitive (rlock, fairlock, rwlock, semaphore,
// multilock or redlock) on a few names and, inside each hold, update a
// protected resource on a separate, never-faulted Redis, while a nemesis
// injects one class of fault on a seeded schedule. Oracles then check what a
// lease lock can promise:
//
//   - overlap: no two holds of one name overlap in time (monotonic clock),
//     beyond what the mode allows (readers share; at most Permits permit
//     holds) — except where a holder was paused past its lease, had the lock
//     taken away during the hold (its key deleted, an amnesic restart), or
//     was told it lost the lock before the other hold began. Those overlaps
//     are expected without fencing, and the fence must catch them;
//   - fencing: the fenced counter rejects every stale write and loses no
//     update (its version equals the writes it accepted; accepted writes are
//     in token order), while the unfenced twin shows the damage overlaps do;
//   - all or nothing: a failed multilock leaves no component held; a second
//     release of one hold is rejected;
//   - FIFO (fairlock): a waiter that arrived well before another is granted
//     first;
//   - leaks: after the run and one lease, no lock key is left, none without
//     expiry, no renewal registered, no subscription held, and the
//     process's goroutines are back to their number before the run;
//   - liveness: hand-off latency, recovery after a holder crash, calls that
//     outlived their deadline.
//
// Workers are goroutines, each with its own Clients and rueidis connections
// behind proxies of their own (a "process"): a holder pause is an
// in-process pause between the resource read and write (the holder cannot
// see its ctx then, as in a GC pause); a crash closes the worker's
// connections with no clean-up at all, mid-hold or mid-wait. With
// Config.Child, workers run as child processes instead (see child.go), and
// pauses and crashes are SIGSTOP and SIGKILL.
package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/redistest"
)

// Scenarios the nemesis knows (reference/reliability.md §9): holder-pause
// S1, latency S3, reply-loss S4, partition S5, restart S10
// (restart-delayed: down a lease first), server-pause S11,
// script-flush S15, key-delete S16, cancel S17, pubsub-kill S24, crash
// (S20–S22's crashed holders and waiters); for redlock also minority-down
// S6 and split-brain S7 (key-delete on one node is S8). bad-input (S25) runs
// no workload: it checks each bad input's outcome (badinput.go), for every
// primitive at once, so it runs under rlock only.
var Scenarios = []string{"none", "holder-pause", "key-delete", "script-flush", "pubsub-kill", "restart", "cancel",
	"partition", "reply-loss", "server-pause", "crash", "minority-down", "split-brain", "bad-input", "restart-delayed", "latency",
	"cancel-unlock", "panic", "shared-owner", "shared-handle"}

// redlockOnly are the scenarios that need several lock servers.
var redlockOnly = []string{"minority-down", "split-brain"}

// Applies reports whether scenario can run with primitive.
func Applies(primitive, scenario string) bool {
	if scenario == "bad-input" {
		return primitive == "rlock"
	}
	if isLifecycle(scenario) {
		return lifecycleApplies(primitive, scenario)
	}
	return primitive == "redlock" || !slices.Contains(redlockOnly, scenario)
}

// Config is one run.
type Config struct {
	Primitive    string        // one of Primitives ("" is rlock)
	LockAddrs    []string      // the Redis server(s) the locks live on; none: started (five for redlock)
	ResourceAddr string        // the protected resource's Redis; "" starts one
	Scenario     string        // one of Scenarios
	Workers      int           // concurrent workers (each its own Clients)
	Names        int           // lock names they share
	Permits      int           // semaphore capacity (default 2)
	Duration     time.Duration // how long the workload runs
	Lease        time.Duration // the Clients' watchdog timeout
	Hold         time.Duration // longest critical section
	Seed         uint64
	Events       io.Writer     `json:"-"` // JSONL of every hold and fault (nil: none)
	HangAfter    time.Duration // a call returning this long after its deadline is a hang (default 100 ms)
	// Child, when set, runs each worker as a child process: the command
	// (argv) starts one, and it must call ChildMain (see IsChild). Then a
	// holder pause is SIGSTOP and a crash SIGKILL.
	Child []string
	// Cluster, when set, is the lock deployment: a Redis Cluster with
	// replicas, for the ClusterScenarios (or none); workers connect to it
	// directly (see cluster.go). WaitReplicas > 0 gives the workers'
	// Clients WaitReplicas(WaitReplicas, a quarter lease).
	Cluster      *redistest.Cluster `json:"-"`
	WaitReplicas int
}

func (c *Config) defaults() error {
	if c.Primitive == "" {
		c.Primitive = "rlock"
	}
	if c.Scenario == "" {
		c.Scenario = "none"
	}
	if c.HangAfter <= 0 {
		c.HangAfter = 100 * time.Millisecond
	}
	if c.Permits <= 0 {
		c.Permits = 2
	}
	switch {
	case !slices.Contains(Primitives, c.Primitive):
		return fmt.Errorf("unknown primitive %q (one of %v)", c.Primitive, Primitives)
	case !slices.Contains(Scenarios, c.Scenario) && !isClusterScenario(c.Scenario):
		return fmt.Errorf("unknown scenario %q (one of %v, or with a Cluster %v)", c.Scenario, Scenarios, ClusterScenarios)
	case clusterConfigError(c) != nil:
		return clusterConfigError(c)
	case c.Scenario == "bad-input" && c.Primitive != "rlock":
		return fmt.Errorf("scenario bad-input covers every primitive: run it with rlock")
	case !isClusterScenario(c.Scenario) && !Applies(c.Primitive, c.Scenario):
		return fmt.Errorf("scenario %s needs several lock servers: redlock only", c.Scenario)
	case c.Workers <= 0 || c.Names <= 0 || c.Duration <= 0 || c.Lease < 10*time.Millisecond || c.Hold < 0:
		return fmt.Errorf("workers, names and duration must be positive, lease at least 10ms, hold not negative")
	case c.Primitive == "multilock" && c.Names < 2:
		return fmt.Errorf("multilock needs at least two names")
	case c.Primitive == "redlock" && len(c.LockAddrs) != 0 && len(c.LockAddrs) < 3:
		return fmt.Errorf("redlock needs at least three lock servers")
	case c.Scenario == "split-brain" && len(c.LockAddrs) != 0 && len(c.LockAddrs) != 5:
		return fmt.Errorf("split-brain needs five lock servers")
	case c.Primitive != "redlock" && len(c.LockAddrs) > 1:
		return fmt.Errorf("%s uses one lock server", c.Primitive)
	}
	return nil
}

// Report is what a run found. The NEVER fields must be zero.
type Report struct {
	Primitive         string       `json:"primitive"`
	Scenario          string       `json:"scenario"`
	Seed              uint64       `json:"seed"`
	Grants            int          `json:"grants"`
	Faults            int          `json:"faults"`
	Overlaps          int          `json:"overlaps"`           // overlapping pairs the mode forbids
	OverlapsUnexcused int          `json:"overlaps_unexcused"` // NEVER: with no pause, no fault taking the lock, no loss told in time
	MaxConcurrent     int          `json:"max_concurrent"`     // most holds of one name at once
	FencedAccepted    int          `json:"fenced_accepted"`
	FencedStale       int64        `json:"fenced_stale_rejected"`
	FencedConflicts   int64        `json:"fenced_conflicts"`
	FencedLost        int64        `json:"fenced_lost_updates"`   // NEVER
	StaleAccepted     int          `json:"stale_writes_accepted"` // NEVER: an accepted write older (by token) than one accepted before it
	PlainLost         int64        `json:"unfenced_lost_updates"`
	PartialHolds      int          `json:"partial_holds"`            // NEVER: a failed multilock left a component held
	DoubleReleases    int          `json:"double_releases_accepted"` // NEVER
	FIFOInversions    int          `json:"fifo_inversions"`          // NEVER (fairlock)
	Leaks             []string     `json:"leaks"`                    // NEVER
	Hangs             int          `json:"hangs"`                    // NEVER: calls that outlived their deadline
	Timeouts          int          `json:"timeouts"`                 // Lock calls that used up a generous deadline
	Stuck             int          `json:"stuck"`                    // NEVER in the lifecycle scenarios: timeouts with no fault injected (a lock left held by nobody)
	HandoffP50        float64      `json:"handoff_p50_ms"`
	HandoffP99        float64      `json:"handoff_p99_ms"`
	RecoveryMax       float64      `json:"recovery_max_ms"`  // crash → next grant of the name, worst case
	Errors            int          `json:"errors"`           // acquire or resource errors (faults cause some)
	Inputs            []InputCheck `json:"inputs,omitempty"` // bad-input: each input's outcome (NEVER: one not ok)
}

// Violations lists the NEVER results that did not hold.
func (r *Report) Violations() []string {
	var v []string
	add := func(n int, what string) {
		if n > 0 {
			v = append(v, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(r.OverlapsUnexcused, "overlaps without a pause, a fault or a loss told in time")
	add(int(r.FencedLost), "fenced updates lost")
	add(r.StaleAccepted, "stale writes accepted")
	add(r.PartialHolds, "partial holds after a failed multilock")
	add(r.DoubleReleases, "double releases accepted")
	add(r.FIFOInversions, "FIFO inversions")
	add(r.Hangs, "calls outlived their deadline")
	add(r.Stuck, "stuck: Lock calls timed out, or lock keys left, with no fault injected and every worker stopped")
	if len(r.Leaks) > 0 {
		v = append(v, fmt.Sprintf("leaks: %v", r.Leaks))
	}
	for _, in := range r.Inputs {
		if !in.OK {
			v = append(v, fmt.Sprintf("bad input %q: %s", in.Input, in.Outcome))
		}
	}
	return v
}

// hold is one grant as a worker saw it.
type hold struct {
	Kind    string        `json:"kind"` // "hold"
	Names   []string      `json:"names"`
	Tokens  []uint64      `json:"tokens"`
	Mode    string        `json:"mode"`
	ID      string        `json:"id,omitempty"` // a permit's id
	Worker  int           `json:"worker"`
	Owner   string        `json:"owner"`   // unique per grant: the fence's owner
	Call    time.Duration `json:"call_ns"` // Lock called, since the run started (monotonic)
	Enter   time.Duration `json:"enter_ns"`
	Exit    time.Duration `json:"exit_ns"`
	Paused  bool          `json:"paused,omitempty"`
	Crashed bool          `json:"crashed,omitempty"`
	LostAt  time.Duration `json:"lost_ns,omitempty"` // when the holder was told it lost the lock (0: not lost)
	Wrote   bool          `json:"wrote,omitempty"`   // reached the resource writes
	Write   []string      `json:"write,omitempty"`   // per name: accepted, stale, conflict, error
	Vers    []int64       `json:"vers,omitempty"`    // per name: the version an accepted write made
}

// Run runs the workload and the nemesis, then the oracles.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	baseline := runtime.NumGoroutine()
	rep, err := runOnce(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// Everything the run started — Clients, connections, proxies, watchers,
	// child readers — is closed by now: the goroutines must be back to
	// where they were (rueidis's may take a moment to notice).
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		rep.Leaks = append(rep.Leaks, fmt.Sprintf("%d goroutines above the baseline of %d after the run", n-baseline, baseline))
	}
	return rep, nil
}

// runOnce sets up, runs the workload and the nemesis, checks, and tears down.
func runOnce(ctx context.Context, cfg Config) (*Report, error) {
	run := &runState{cfg: cfg, start: monotime(), events: cfg.Events}
	defer run.teardown()
	if err := run.setup(ctx); err != nil {
		return nil, err
	}
	if cfg.Scenario == "bad-input" {
		rep := &Report{Primitive: cfg.Primitive, Scenario: cfg.Scenario, Seed: cfg.Seed, Leaks: []string{}}
		rep.Inputs = run.badInputs(ctx)
		rep.Faults = len(rep.Inputs)
		return rep, nil
	}
	wctx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	for _, w := range run.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cfg.Child != nil {
				w.runChildren(wctx)
				return
			}
			w.run(wctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		run.nemesis(wctx)
	}()
	wg.Wait()
	run.watchers.Wait()
	run.healAll()
	return run.check(ctx), nil
}

// runState is one run: its servers, workers, and what they recorded.
type runState struct {
	cfg     Config
	start   time.Duration // CLOCK_MONOTONIC at the start, shared with child processes
	child   bool          // this is a child process: holds go to events
	events  io.Writer
	names   []string
	prefix  string              // of every name of this run
	servers []*redistest.Server // lock servers the harness started (nil entries: given)
	admins  []rueidis.Client    // one per lock server, never behind a proxy
	res     resource
	workers []*worker
	closers []func()

	mu         sync.Mutex
	holds      []hold
	faults     int
	errors     int
	hangs      int
	timeouts   int
	partial    int
	doubles    int
	paused     bool // the nemesis asks the next holder to pause (holder-pause)
	childLeaks int  // renewals and subscriptions child processes still had after Close
	crashes    []crash
	watchers   sync.WaitGroup  // watchReclaim goroutines
	reclaims   []time.Duration // crashed permits: crash → lease run out (-1: never)
	outages    []time.Duration // when a lock server came back (pause, restart)
	maxDelay   time.Duration   // the slowest link of the run: bytes may land this late
	rejoins    sync.WaitGroup  // killed cluster nodes coming back (cluster.go), awaited at teardown
	// hits are the faults that took locks away (key deleted, server
	// restarted), by time; name "" hits every name.
	hits []hit
}

type hit struct {
	at    time.Duration
	name  string
	until time.Duration // > 0: a span from at to until, every name (hitSpan)
}

type crash struct {
	at    time.Duration
	names []string // the names held at the crash (none: a waiter)
}

// setup starts or connects to the servers and builds the workers.
func (r *runState) setup(ctx context.Context) error {
	cfg := &r.cfg
	addrs := cfg.LockAddrs
	if cfg.Cluster != nil {
		addrs = cfg.Cluster.Addrs() // the admins reach each node
		r.servers = make([]*redistest.Server, len(addrs))
	} else if len(addrs) == 0 {
		n := 1
		if cfg.Primitive == "redlock" {
			n = 5
		}
		for range n {
			s, err := redistest.StartMain()
			if err != nil {
				return err
			}
			r.closers = append(r.closers, s.Kill)
			r.servers = append(r.servers, s)
			addrs = append(addrs, s.Addr())
		}
	} else {
		r.servers = make([]*redistest.Server, len(addrs))
	}
	cfg.LockAddrs = addrs
	if cfg.ResourceAddr == "" {
		s, err := redistest.StartMain()
		if err != nil {
			return err
		}
		r.closers = append(r.closers, s.Kill)
		cfg.ResourceAddr = s.Addr()
	}
	resRC, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.ResourceAddr}, DisableCache: true})
	if err != nil {
		return err
	}
	r.closers = append(r.closers, resRC.Close)
	r.res = resource{rc: resRC}
	for _, a := range addrs {
		admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{a}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			return err
		}
		r.closers = append(r.closers, admin.Close)
		r.admins = append(r.admins, admin)
	}
	r.prefix = fmt.Sprintf("torture:%s:%d:", cfg.Primitive, cfg.Seed)
	r.names = make([]string, cfg.Names)
	for i := range r.names {
		r.names[i] = r.prefix + fmt.Sprint(i)
		_ = resRC.Do(ctx, resRC.B().Del().Key("fenced:"+r.names[i], "plain:"+r.names[i]).Build()).Error()
	}
	for i := range cfg.Workers {
		w, err := r.newWorker(i)
		if err != nil {
			return err
		}
		r.workers = append(r.workers, w)
	}
	r.partitionGroups()
	return nil
}

// teardown closes what setup opened, last first.
func (r *runState) teardown() {
	r.rejoins.Wait()
	for _, w := range r.workers {
		w.close()
	}
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

func (r *runState) now() time.Duration { return monotime() - r.start }

func (r *runState) log(v any) {
	if r.events == nil {
		return
	}
	b, _ := json.Marshal(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.events.Write(append(b, '\n'))
}

// count adds one to a counter under the lock.
func (r *runState) count(p *int) {
	r.mu.Lock()
	*p++
	r.mu.Unlock()
}

// takePause reports whether this holder should pause past its lease.
func (r *runState) takePause() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paused
	r.paused = false
	return p
}

func (r *runState) record(h hold) {
	if r.child {
		r.log(h) // the parent records it
		return
	}
	r.mu.Lock()
	r.holds = append(r.holds, h)
	r.mu.Unlock()
	r.log(h)
}
