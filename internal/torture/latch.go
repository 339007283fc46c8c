package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/latch"
)

// The countdown latch holds nothing, so it is not one of Primitives (whose
// oracles judge holds); RunLatch drives it on its own. Each round a setter
// sets a fresh latch to k, awaiters on their own Clients (separate
// connections and subscriptions, as separate processes) Await it, and k
// counters count it down after a random delay, while a nemesis injects one
// fault. The oracles:
//
//   - never early: no Await returns before the last CountDown was sent (the
//     count cannot be zero before), and each one that returns reads the
//     count 0 right after;
//   - always: every Await returns, without error, within the poll interval
//     plus the fault's length plus a margin of the last CountDown's reply
//     (a lost message or a killed subscription costs a poll, never a hang);
//   - leaks: no latch key is left after the run.

// LatchScenarios are the faults RunLatch knows: none, pubsub-kill (every
// subscription of the server killed every 100-300 ms) and server-pause (the
// server stopped for LatchConfig.Pause, about once a second).
var LatchScenarios = []string{"none", "pubsub-kill", "server-pause"}

// LatchConfig is one latch run.
type LatchConfig struct {
	Scenario string        // one of LatchScenarios ("" is none)
	Awaiters int           // Clients awaiting each round (default 6)
	Counters int           // most CountDowns a round needs (default 4)
	Duration time.Duration // how long rounds are started
	Poll     time.Duration // the awaiters' poll interval (default 1 s)
	Hold     time.Duration // longest delay before a CountDown (default 20 ms)
	Pause    time.Duration // server-pause: how long the server stops (default 300 ms)
	Seed     uint64
}

// LatchReport is what RunLatch saw.
type LatchReport struct {
	Rounds, Awaits, CountDowns, Faults int
	// Violations of the oracles, one line each.
	Problems []string
	// SlowestOpen is the longest time from the last CountDown's reply to an
	// Await's return.
	SlowestOpen time.Duration
}

// latchMargin is the room a loaded two-core machine needs beyond the poll
// and the fault: a process stall of a few hundred ms, twice (measured in
// lockopt's MinWaiterTimeout note), with room to spare.
const latchMargin = 2 * time.Second

// latchAwaitName is the name the awaiters wait on: the round's own; the
// oracle test points it elsewhere to see the oracles catch early returns.
var latchAwaitName = func(name string) string { return name }

// RunLatch runs cfg's rounds on a redis-server of its own and reports.
func RunLatch(ctx context.Context, cfg LatchConfig) (*LatchReport, error) {
	if cfg.Scenario == "" {
		cfg.Scenario = "none"
	}
	if !slices.Contains(LatchScenarios, cfg.Scenario) {
		return nil, fmt.Errorf("torture: unknown latch scenario %q (one of %v)", cfg.Scenario, LatchScenarios)
	}
	cfg.Awaiters = cmp0(cfg.Awaiters, 6)
	cfg.Counters = cmp0(cfg.Counters, 4)
	cfg.Poll = cmp0(cfg.Poll, time.Second)
	cfg.Hold = cmp0(cfg.Hold, 20*time.Millisecond)
	cfg.Pause = cmp0(cfg.Pause, 300*time.Millisecond)

	srv, err := redistest.StartMain()
	if err != nil {
		return nil, err
	}
	defer srv.Kill()
	opt := rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}
	admin, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	clients := make([]*redisync.Client, cfg.Awaiters+cfg.Counters)
	for i := range clients {
		rc, err := rueidis.NewClient(opt)
		if err != nil {
			return nil, err
		}
		c := redisync.New(rc, redisync.WithMaxPoll(cfg.Poll))
		defer func() { c.Close(); rc.Close() }()
		clients[i] = c
	}

	rep := &LatchReport{}
	var mu sync.Mutex
	problem := func(format string, args ...any) {
		mu.Lock()
		rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}

	nctx, stopNemesis := context.WithCancel(ctx)
	nemesisDone := make(chan struct{})
	go func() {
		defer close(nemesisDone)
		rep.Faults = latchNemesis(nctx, cfg, srv, admin)
	}()

	rng := rand.New(rand.NewPCG(cfg.Seed, 0x1a7c4))
	deadline := time.Now().Add(cfg.Duration)
	for r := 0; time.Now().Before(deadline) && ctx.Err() == nil; r++ {
		latchRound(ctx, cfg, clients, rng, fmt.Sprintf("torture:latch:%d:%d", cfg.Seed, r), rep, &mu, problem)
		rep.Rounds++
	}
	stopNemesis()
	<-nemesisDone

	keys, err := admin.Do(ctx, admin.B().Keys().Pattern("torture:latch:*").Build()).AsStrSlice()
	if err != nil {
		return nil, err
	}
	if len(keys) > 0 {
		problem("leak: latch keys left after the run: %q", keys)
	}
	return rep, ctx.Err()
}

// setCount sets a fresh latch's count, the round's setup. The pubsub-kill
// nemesis kills connections that carry a subscription, and with RESP3
// rueidis subscribes on the connection its commands share, so a setup write
// can meet a broken pipe (seen once in CI: "setting the count: write: broken
// pipe"). That is the fault, not a finding: the setup is tried again after
// a transient error (as latchCount's reads are), and a
// retry that finds the count already set (the first try ran before the
// connection went) reads it to make sure it is the round's.
func setCount(ctx context.Context, l *latch.Latch, k int64) error {
	var err error
	for try := 0; try < 3 && ctx.Err() == nil; try++ {
		var ok bool
		if ok, err = l.TrySetCount(ctx, k); err != nil {
			if !engine.Transient(err) {
				break
			}
			continue
		}
		if ok {
			return nil
		}
		n, cerr := l.Count(ctx)
		if cerr == nil && n == k && try > 0 {
			return nil
		}
		return fmt.Errorf("TrySetCount(%d) = false: the fresh latch already had count %d (%v)", k, n, cerr)
	}
	return fmt.Errorf("TrySetCount(%d): %w", k, err)
}

// latchRound runs one round on a fresh latch name.
func latchRound(ctx context.Context, cfg LatchConfig, clients []*redisync.Client, rng *rand.Rand, name string,
	rep *LatchReport, mu *sync.Mutex, problem func(string, ...any)) {
	awaiters, counters := clients[:cfg.Awaiters], clients[cfg.Awaiters:]
	k := 1 + rng.IntN(cfg.Counters)
	// No wait may take longer than this: the poll, a server pause and the
	// margin, with room for a pause before the last CountDown too.
	bound := cfg.Poll + 2*cfg.Pause + latchMargin
	if err := setCount(ctx, latch.New(awaiters[0], name), int64(k)); err != nil {
		problem("%s: %v", name, err)
		return
	}
	delays := make([]time.Duration, k)
	for i := range delays {
		delays[i] = time.Duration(rng.Int64N(int64(cfg.Hold) + 1))
	}

	type awaited struct {
		at    time.Time
		err   error
		count int64
	}
	got := make([]awaited, len(awaiters))
	sent := make([]time.Time, k)
	replied := make([]time.Time, k)
	var wg sync.WaitGroup
	for i, c := range awaiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := latch.New(c, latchAwaitName(name), latch.WithPoll(cfg.Poll))
			actx, cancel := context.WithTimeout(ctx, cfg.Hold+2*bound)
			defer cancel()
			err := l.Await(actx)
			got[i].at, got[i].err = time.Now(), err
			if err == nil {
				got[i].count, got[i].err = latchCount(ctx, l)
			}
		}()
	}
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(delays[i])
			sent[i] = time.Now()
			if err := latch.New(counters[i], name).CountDown(ctx); err != nil {
				problem("%s: CountDown: %v", name, err)
			}
			replied[i] = time.Now()
		}()
	}
	wg.Wait()

	lastSent, lastReply := slices.MaxFunc(sent, time.Time.Compare), slices.MaxFunc(replied, time.Time.Compare)
	mu.Lock()
	rep.Awaits += len(awaiters)
	rep.CountDowns += k
	for _, a := range got {
		if a.err == nil && a.at.After(lastReply) {
			rep.SlowestOpen = max(rep.SlowestOpen, a.at.Sub(lastReply))
		}
	}
	mu.Unlock()
	for i, a := range got {
		switch {
		case errors.Is(a.err, context.DeadlineExceeded):
			problem("%s: awaiter %d still waiting %v after the last CountDown (bound %v)", name, i, a.at.Sub(lastReply), bound)
		case a.err != nil:
			problem("%s: awaiter %d: %v", name, i, a.err)
		case a.at.Before(lastSent):
			problem("%s: awaiter %d returned %v before the last CountDown was sent", name, i, lastSent.Sub(a.at))
		case a.count != 0:
			problem("%s: awaiter %d returned and read count %d", name, i, a.count)
		case a.at.Sub(lastReply) > bound:
			problem("%s: awaiter %d returned %v after the last CountDown (bound %v)", name, i, a.at.Sub(lastReply), bound)
		}
	}
}

// latchCount reads l's count, again after a transport error: a killed
// subscription takes the Client's connection, and a reply in flight on it,
// with it (RESP3 carries both on one connection).
func latchCount(ctx context.Context, l *latch.Latch) (int64, error) {
	for try := 1; ; try++ {
		n, err := l.Count(ctx)
		if err == nil || try == 5 || !engine.Transient(err) {
			return n, err
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// latchNemesis injects cfg's fault until ctx ends and returns how many.
func latchNemesis(ctx context.Context, cfg LatchConfig, srv *redistest.Server, admin rueidis.Client) int {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xfa17))
	faults := 0
	for {
		switch cfg.Scenario {
		case "none":
			<-ctx.Done()
			return faults
		case "pubsub-kill":
			sleep(ctx, 100*time.Millisecond+time.Duration(rng.Int64N(int64(200*time.Millisecond))))
			if ctx.Err() != nil {
				return faults
			}
			_ = admin.Do(ctx, admin.B().ClientKill().TypePubsub().Build()).Error()
		case "server-pause":
			sleep(ctx, 700*time.Millisecond+time.Duration(rng.Int64N(int64(600*time.Millisecond))))
			if ctx.Err() != nil {
				return faults
			}
			srv.Pause()
			time.Sleep(cfg.Pause) // resumed whatever ctx says
			srv.Resume()
		}
		faults++
	}
}

// cmp0 returns v, or def when v is zero.
func cmp0[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
