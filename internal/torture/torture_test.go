package torture

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The CI tier: every scenario for a few seconds with a fixed seed, gating
// on the NEVER classes. Leases are generous against the critical sections
// (a 2-core CI box stalls for 100 ms and more).
func TestNeverClassesHoldUnderEveryScenario(t *testing.T) {
	lock, resource := redistest.Start(t), redistest.Start(t)
	for _, sc := range Scenarios {
		if sc == "partition" {
			// Open finding: a worker connection that stalls and heals makes
			// rueidis v1.0.79 panic ("protocol bug, message handled out of
			// order") in some seeds, killing the process. Run it by hand:
			// redisync torture --scenario partition.
			continue
		}
		t.Run(sc, func(t *testing.T) {
			cfg := Config{
				LockAddr: lock.Addr(), ResourceAddr: resource.Addr(),
				Scenario: sc, Workers: 6, Names: 2, Duration: 3 * time.Second,
				Lease: time.Second, Hold: 5 * time.Millisecond, Seed: 1,
				HangAfter: 500 * time.Millisecond, // CI machines stall; 100 ms by hand
			}
			if sc == "restart" || sc == "server-pause" {
				cfg.LockAddr = "" // the harness restarts or pauses its own server
			}
			rep, err := Run(context.Background(), cfg)
			require.NoError(t, err)
			t.Logf("%+v", *rep)
			assert.Empty(t, rep.Violations())
			assert.Positive(t, rep.Grants)
			if sc != "none" && sc != "cancel" {
				assert.Positive(t, rep.Faults)
			}
			if sc == "holder-pause" {
				assert.Positive(t, rep.Overlaps, "a holder paused past its lease overlaps the next one")
				assert.Positive(t, rep.FencedStale+rep.FencedConflicts, "the fence turned the stale holder away")
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
	detected, rejected := 0, 0
	for seed := range uint64(seeds) {
		rep, err := Run(context.Background(), Config{
			LockAddr: lock.Addr(), ResourceAddr: resource.Addr(),
			Scenario: "holder-pause", Workers: 4, Names: 1, Duration: 1500 * time.Millisecond,
			Lease: 200 * time.Millisecond, Hold: 2 * time.Millisecond, Seed: 100 + seed,
		})
		require.NoError(t, err)
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
