package torture

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CI tier for the countdown latch: under each fault, no Await returns
// before the count reached zero and every Await returns. About 8 s in all.
func TestLatchNeverOpensEarlyAndAlwaysOpens(t *testing.T) {
	for _, sc := range LatchScenarios {
		t.Run(sc, func(t *testing.T) {
			cfg := LatchConfig{Scenario: sc, Duration: 2 * time.Second, Seed: 1}
			if sc == "server-pause" {
				cfg.Duration = 3 * time.Second // two or three pauses
			}
			rep, err := RunLatch(context.Background(), cfg)
			require.NoError(t, err)
			t.Logf("%+v", *rep)
			assert.Empty(t, rep.Problems)
			assert.Positive(t, rep.Rounds)
			assert.Positive(t, rep.Awaits)
			if sc != "none" {
				assert.Positive(t, rep.Faults)
			}
		})
	}
}

// The oracles have teeth: awaiters pointed at another, open latch return at
// once, before the round's CountDowns, and are reported.
func TestLatchOracleCatchesEarlyReturns(t *testing.T) {
	latchAwaitName = func(name string) string { return name + ":elsewhere" }
	t.Cleanup(func() { latchAwaitName = func(name string) string { return name } })
	rep, err := RunLatch(context.Background(), LatchConfig{Duration: 500 * time.Millisecond, Hold: 50 * time.Millisecond, Seed: 1})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Problems, "early returns not seen")
	assert.Contains(t, rep.Problems[0], "before the last CountDown was sent")
}
