package torture

import (
	"context"
	"math/rand/v2"
	"time"
)

// nemesis injects the scenario's fault every so often until ctx ends.
//
// With one lock server, a fault that takes locks away (key deletion, an
// amnesic restart, a pause past the lease) is recorded as a hit: holds it
// struck may overlap the next ones (the fence must catch them). With
// redlock, a fault strikes one node of five and must not break exclusion:
// no hit is recorded, except in split-brain, where the node both halves
// share loses its keys (Kleppmann's counter-example).
func (r *runState) nemesis(ctx context.Context) {
	sc := r.cfg.Scenario
	if sc == "none" || sc == "cancel" || isLifecycle(sc) {
		return
	}
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 1<<32))
	if sc == "minority-down" {
		// Two of the nodes are cut off from every worker for the whole run.
		for _, w := range r.workers {
			w.proxies[0].set(blackhole)
			w.proxies[1].set(blackhole)
		}
		r.fault(map[string]any{"nodes": []int{0, 1}})
		<-ctx.Done()
		return
	}
	every := max(r.cfg.Lease, 100*time.Millisecond)
	if sc == "crash" || isClusterScenario(sc) {
		every /= 2 // crashes are quick; their recovery takes a lease; a failover takes seconds of its own
	}
	if sc == "split-brain" {
		// Node 2 forgets a held key soon after it is granted, so that the
		// other half can get in while the holder still works.
		every = 10 * time.Millisecond
	}
	for n := 0; ; n++ {
		wait := every/2 + time.Duration(rng.Int64N(int64(every)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		node := rng.IntN(len(r.admins)) // redlock: one node; else the server
		fault := map[string]any{}
		if len(r.admins) > 1 {
			fault["node"] = node
		}
		switch sc {
		case "cluster-failover", "cluster-failover-force", "cluster-kill-master", "cluster-replica-pause", "cluster-lossy-failover":
			if !r.clusterFault(ctx, rng, fault) {
				continue // the Cluster is not whole yet: no fault
			}
		case "holder-pause":
			if r.cfg.Child != nil {
				// SIGSTOP a child inside a hold, for two leases.
				w, p := r.childHolding(ctx, rng)
				if p == nil {
					continue // nobody held: no fault
				}
				fault["worker"] = w.id
				w.sigstop(ctx, p, 2*r.cfg.Lease)
				break
			}
			r.mu.Lock()
			r.paused = true
			r.mu.Unlock()
		case "crash":
			if r.cfg.Child != nil {
				if !r.killChild(ctx, rng, n, fault) {
					continue // no child to kill: no fault
				}
			} else {
				r.crashWorker(n, rng, fault)
			}
		case "key-delete", "split-brain":
			if sc == "split-brain" {
				node = 2 // the node both halves reach
			}
			name := r.names[rng.IntN(len(r.names))]
			admin := r.admins[node]
			at := r.now()
			if sc == "split-brain" {
				// Only a key held for a while (granted, fenced, and the
				// holder at work) is forgotten: earlier, the deletion
				// would only fail the acquire's fencing phase.
				pttl, err := admin.Do(ctx, admin.B().Pttl().Key(name).Build()).AsInt64()
				if err != nil || pttl <= 0 || pttl > int64((r.cfg.Lease-50*time.Millisecond)/time.Millisecond) {
					continue
				}
			}
			n, err := admin.Do(ctx, admin.B().Del().Key(name).Build()).AsInt64()
			if sc == "split-brain" && (err != nil || n == 0) {
				continue // nobody held it there: no fault
			}
			fault["name"] = name
			if len(r.admins) == 1 || sc == "split-brain" {
				r.hit(at, name)
			}
		case "script-flush":
			for _, admin := range r.admins {
				_ = admin.Do(ctx, admin.B().ScriptFlush().Build()).Error()
			}
		case "pubsub-kill":
			for _, admin := range r.admins {
				_ = admin.Do(ctx, admin.B().ClientKill().TypePubsub().Build()).Error()
			}
		case "partition", "reply-loss":
			// One worker loses its network (both ways, or only the replies)
			// for longer than a lease (partition) or a moment (reply-loss).
			w := r.workers[rng.IntN(len(r.workers))]
			mode, d := blackhole, r.cfg.Lease+r.cfg.Lease/2
			if sc == "reply-loss" {
				mode, d = dropReplies, 200*time.Millisecond
			}
			fault["worker"] = w.id
			for _, px := range w.proxies {
				px.set(mode)
			}
			sleep(ctx, d)
			for _, px := range w.proxies {
				if mode == dropReplies {
					px.reset()
				} else {
					px.set(pass)
				}
			}
		case "latency":
			// One worker's link turns slow for 1.5 leases: a quarter lease
			// each way to a single server; for redlock, more than a lease
			// to a majority of nodes (S3: no acquire may succeed with its
			// validity spent).
			w := r.workers[rng.IntN(len(r.workers))]
			fault["worker"] = w.id
			slow, d := w.proxies, r.cfg.Lease/4
			if len(w.proxies) > 1 {
				slow, d = w.proxies[:len(w.proxies)/2+1], r.cfg.Lease+r.cfg.Lease/2
			}
			r.mu.Lock()
			r.maxDelay = max(r.maxDelay, d)
			r.mu.Unlock()
			for _, px := range slow {
				px.delay.Store(int64(d))
			}
			sleep(ctx, r.cfg.Lease+r.cfg.Lease/2)
			for _, px := range slow {
				px.delay.Store(0)
			}
		case "server-pause", "restart", "restart-delayed":
			srv := r.servers[node]
			if srv == nil {
				return // not ours to pause or restart
			}
			at := r.now()
			switch sc {
			case "restart":
				_ = srv.RestartMain() // amnesic: nothing persists
			case "restart-delayed":
				// Down for a lease, then back empty: every lease has run
				// out meanwhile (the safe way to restart a lock server).
				srv.Kill()
				sleep(ctx, r.cfg.Lease)
				_ = srv.RestartMain()
			default:
				// The server stops for longer than a lease: every hold
				// expires at resume (the server's clock ran on).
				srv.Pause()
				sleep(ctx, r.cfg.Lease+r.cfg.Lease/2)
				srv.Resume()
			}
			if len(r.admins) == 1 {
				r.hit(at, "")
			}
			r.mu.Lock()
			r.outages = append(r.outages, r.now())
			r.mu.Unlock()
		}
		r.fault(fault)
	}
}

// crashWorker crashes an in-process worker: every other time one that is
// waiting now (a fair lock's queue must get over a dead waiter, a
// semaphore's over a dead request), the others inside their next hold
// (picking one that holds now: it soon holds again).
func (r *runState) crashWorker(n int, rng *rand.Rand, fault map[string]any) {
	w := r.workers[rng.IntN(len(r.workers))]
	for _, i := range rng.Perm(len(r.workers)) {
		// A waiter for a waiter crash; for a holder crash, one that holds
		// now, so that it soon holds again (and dies in that hold).
		if x := r.workers[i]; x.waiting.Load() == (n%2 == 1) {
			w = x
			break
		}
	}
	fault["worker"] = w.id
	if n%2 == 1 && w.waiting.Load() {
		w.crashed.Store(true)
		w.kill()
		fault["while"] = "waiting"
	} else {
		w.crashNext.Store(true)
		fault["while"] = "holding"
	}
}

// killChild SIGKILLs a child process: every other time one inside a hold,
// the others whatever it is doing. It reports whether it killed one.
func (r *runState) killChild(ctx context.Context, rng *rand.Rand, n int, fault map[string]any) bool {
	w := r.workers[rng.IntN(len(r.workers))]
	p := w.current()
	if n%2 == 0 {
		w, p = r.childHolding(ctx, rng)
	}
	if p == nil {
		return false
	}
	fault["worker"], fault["held"] = w.id, w.sigkill(p)
	return true
}

// childHolding waits (a second at most) for a child process inside a hold.
func (r *runState) childHolding(ctx context.Context, rng *rand.Rand) (*worker, *childProc) {
	deadline := time.Now().Add(time.Second)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		w := r.workers[rng.IntN(len(r.workers))]
		if p := w.current(); p != nil && p.holding() {
			return w, p
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil, nil
}

// partitionGroups sets split-brain's standing partition: even workers reach
// nodes 0–2, odd workers nodes 2–4, so each half can hold a majority that
// shares node 2 alone.
func (r *runState) partitionGroups() {
	if r.cfg.Scenario != "split-brain" {
		return
	}
	for _, w := range r.workers {
		cut := []int{3, 4}
		if w.id%2 == 1 {
			cut = []int{0, 1}
		}
		for _, n := range cut {
			w.proxies[n].set(blackhole)
		}
	}
}

// healAll ends every network fault once the workload has stopped.
func (r *runState) healAll() {
	for _, w := range r.workers {
		for _, px := range w.proxies {
			px.set(pass)
			px.delay.Store(0)
		}
	}
	for _, s := range r.servers {
		if s != nil {
			s.Resume()
		}
	}
}

// hit records a fault that took name's lock away ("" for every name); the
// holds it struck span the fault's start to now.
func (r *runState) hit(at time.Duration, name string) {
	r.mu.Lock()
	r.hits = append(r.hits, hit{at: at, name: name}, hit{at: r.now(), name: name})
	r.mu.Unlock()
}

func (r *runState) fault(f map[string]any) {
	f["kind"], f["scenario"], f["at_ns"] = "fault", r.cfg.Scenario, r.now()
	r.mu.Lock()
	r.faults++
	r.mu.Unlock()
	r.log(f)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
