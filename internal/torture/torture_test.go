package torture

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	if IsChild() { // this test binary, started as a worker process
		os.Exit(ChildMain(os.Stdout))
	}
	goleak.VerifyTestMain(m)
}

// childCommand starts this test binary as a torture child.
func childCommand() []string { return []string{os.Args[0], "-test.run=^$"} }

// ciTier is what the CI tier runs, by primitive (reference/reliability.md
// §9: rlock S1, S4, S5, S10, S11, S15, S16, S17, S24 and crashes; fairlock
// S20, rwlock S21, semaphore S22, multilock S23, redlock S3, S6–S8 and S10).
var ciTier = map[string][]string{
	"rlock": {"none", "holder-pause", "key-delete", "script-flush", "pubsub-kill", "restart", "cancel", "partition", "reply-loss", "server-pause", "crash",
		"cancel-unlock", "panic", "shared-owner", "shared-handle"},
	"fairlock":  {"none", "cancel", "crash", "pubsub-kill", "shared-owner", "shared-handle"},
	"rwlock":    {"none", "cancel", "crash", "shared-handle"},
	"semaphore": {"cancel", "crash", "cancel-unlock"},
	"multilock": {"cancel", "crash", "partition", "panic"},
	"redlock":   {"key-delete", "minority-down", "split-brain", "restart", "latency", "cancel-unlock"},
}

// The CI tier: each primitive under its scenarios for a few seconds with a
// fixed seed, gating on the NEVER classes. Leases are generous against the
// critical sections (a 2-core CI box stalls for 100 ms and more).
//
// Two scenarios run at once (go test's -parallel, GOMAXPROCS here), each
// with servers of its own — lock servers and resource — so that one's faults
// and names never reach the other.
func TestNeverClassesHoldUnderEveryScenario(t *testing.T) {
	for _, prim := range Primitives {
		for _, sc := range ciTier[prim] {
			t.Run(prim+"/"+sc, func(t *testing.T) {
				t.Parallel()
				resource := redistest.Start(t)
				cfg := Config{
					Primitive: prim, ResourceAddr: resource.Addr(),
					Scenario: sc, Workers: 6, Names: 2, Duration: 2 * time.Second,
					Lease: time.Second, Hold: 5 * time.Millisecond, Seed: 1,
					HangAfter: 500 * time.Millisecond, // CI machines stall; 100 ms by hand
				}
				switch sc {
				case "holder-pause":
					cfg.Duration = 3 * time.Second // a pause, then a lease to see its effect
				case "crash":
					// A crash comes at the victim's next hold, which can wait
					// (a writer behind a dead reader's share); then a lease
					// to recover, and margin for a slow machine.
					cfg.Duration = 4 * time.Second
				}
				if sc == "split-brain" {
					// Holds long enough that the other half gets in while
					// one half still works, unaware (it learns at its next
					// renewal); a second more for a slow machine to show it.
					cfg.Hold, cfg.Duration = 300*time.Millisecond, 3*time.Second
				}
				rep, err := Run(context.Background(), cfg)
				require.NoError(t, err)
				t.Logf("%+v", *rep)
				assert.Empty(t, rep.Violations())
				assert.Positive(t, rep.Grants, "the service went on")
				if sc != "none" && sc != "cancel" && !isLifecycle(sc) {
					assert.Positive(t, rep.Faults)
				}
				switch sc {
				case "holder-pause":
					assert.Positive(t, rep.Overlaps, "a holder paused past its lease overlaps the next one")
					assert.Positive(t, rep.FencedStale+rep.FencedConflicts, "the fence turned the stale holder away")
				case "split-brain":
					// EXP-UNFENCED: two holders at once, and the two-phase
					// tokens let the fence turn the older one away.
					assert.Positive(t, rep.Overlaps, "the split view gave two holders")
					assert.Positive(t, rep.FencedStale+rep.FencedConflicts, "the fence caught the older holder")
				case "crash":
					assert.Positive(t, rep.RecoveryMax, "a crashed holder's share came back")
					assert.Less(t, rep.RecoveryMax, recoveryBound(cfg))
				}
				if prim == "semaphore" {
					assert.LessOrEqual(t, rep.MaxConcurrent, 2)
				}
			})
		}
	}
}

// recoveryBound is how long, in ms, a crashed holder's share may take to
// come back: its lease runs out, a waiter killed at the head of the queue
// may hold the queue up for its waiter timeout (one lease here), the next
// waiter polls (a quarter lease), and a loaded machine stalls (a second).
func recoveryBound(cfg Config) float64 {
	return float64(2*cfg.Lease+cfg.Lease/4+time.Second) / 1e6
}

// Workers as child processes: a pause is SIGSTOP (the whole process, its
// watchdog included) and a crash SIGKILL (no clean-up at all).
func TestChildProcessesStoppedAndKilled(t *testing.T) {
	resource := redistest.Start(t)
	for _, tc := range []struct{ prim, sc string }{
		{"rlock", "holder-pause"}, {"rlock", "crash"}, {"fairlock", "crash"}, {"semaphore", "crash"},
	} {
		t.Run(tc.prim+"/"+tc.sc, func(t *testing.T) {
			cfg := Config{
				Primitive: tc.prim, ResourceAddr: resource.Addr(), Scenario: tc.sc,
				Workers: 4, Names: 1, Duration: 3 * time.Second, Lease: 500 * time.Millisecond,
				Hold: 20 * time.Millisecond, Seed: 7, HangAfter: 500 * time.Millisecond,
				Child: childCommand(),
			}
			rep, err := Run(context.Background(), cfg)
			require.NoError(t, err)
			t.Logf("%+v", *rep)
			assert.Empty(t, rep.Violations())
			assert.Positive(t, rep.Grants)
			assert.Positive(t, rep.Faults)
			if tc.sc == "holder-pause" {
				// A stopped holder overlaps the next ones. On SIGCONT it
				// usually finds its loss already signalled and does not
				// write; when it does, the fence must turn it away (the
				// NEVER results above).
				assert.Positive(t, rep.Overlaps, "a stopped holder overlaps the next one")
			} else {
				assert.Positive(t, rep.RecoveryMax, "a killed holder's share came back")
				assert.Less(t, rep.RecoveryMax, recoveryBound(cfg))
			}
		})
	}
}

// The self-test: the harness has teeth. With a holder paused past its
// lease, the overlap oracle sees the overlap in (nearly) every seed, and the
// fence turns the overlapping write away (stale token, or a version that
// moved) without losing an update.
func TestHarnessDetectsAPausedHolder(t *testing.T) {
	lock, resource := redistest.Start(t), redistest.Start(t)
	const seeds = 10
	// Two seeds at once (each its own names): a run mostly waits on its
	// pauses and leases.
	reps := make([]*Report, seeds)
	var g errgroup.Group
	g.SetLimit(2)
	for seed := range uint64(seeds) {
		g.Go(func() error {
			rep, err := Run(context.Background(), Config{
				LockAddrs: []string{lock.Addr()}, ResourceAddr: resource.Addr(),
				Scenario: "holder-pause", Workers: 4, Names: 1, Duration: 1500 * time.Millisecond,
				Lease: 200 * time.Millisecond, Hold: 2 * time.Millisecond, Seed: 100 + seed,
			})
			reps[seed] = rep
			return err
		})
	}
	require.NoError(t, g.Wait())
	detected, rejected := 0, 0
	for seed, rep := range reps {
		if rep.Overlaps > 0 {
			detected++
		}
		if rep.FencedStale+rep.FencedConflicts > 0 {
			rejected++
		}
		assert.Zero(t, rep.FencedLost, "seed %d", seed)
		assert.Zero(t, rep.StaleAccepted, "seed %d", seed)
	}
	t.Logf("overlap detected in %d/%d seeds, stale write rejected in %d/%d", detected, seeds, rejected, seeds)
	assert.GreaterOrEqual(t, detected*100, 95*seeds, "overlap detection below 95%% of seeds")
	assert.GreaterOrEqual(t, rejected*100, 95*seeds, "the fence missed stale writes")
}

func TestBadConfigsAreRejected(t *testing.T) {
	for _, cfg := range []Config{
		{Primitive: "mutex", Workers: 1, Names: 1, Duration: time.Second, Lease: time.Second},
		{Scenario: "split-brain", Workers: 1, Names: 1, Duration: time.Second, Lease: time.Second},
		{Primitive: "multilock", Workers: 1, Names: 1, Duration: time.Second, Lease: time.Second},
		{Primitive: "redlock", LockAddrs: []string{"a", "b"}, Workers: 1, Names: 1, Duration: time.Second, Lease: time.Second},
		{Workers: 0, Names: 1, Duration: time.Second, Lease: time.Second},
		{Workers: 1, Names: 1, Duration: time.Second, Lease: time.Millisecond},
		{Scenario: "cluster-failover", Workers: 1, Names: 1, Duration: time.Second, Lease: time.Second}, // no Cluster
		{WaitReplicas: 1, Workers: 1, Names: 1, Duration: time.Second, Lease: time.Second},              // not a Cluster run
	} {
		_, err := Run(context.Background(), cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

// S25: every bad input gets its documented outcome, and nothing is left in
// Redis.
func TestBadInputsGetTypedErrors(t *testing.T) {
	rep, err := Run(context.Background(), Config{Scenario: "bad-input", Workers: 1, Names: 1, Duration: time.Second, Lease: time.Second})
	require.NoError(t, err)
	for _, in := range rep.Inputs {
		t.Logf("%-32s %v  %s", in.Input, in.OK, in.Outcome)
	}
	assert.Empty(t, rep.Violations())
	assert.GreaterOrEqual(t, len(rep.Inputs), 15)
}
