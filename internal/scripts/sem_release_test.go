package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// TestSemReleaseTellsAPermitWhoseLeaseRanOut: the release of the only
// permit (the common path: one DEL) says whether its lease had run out
// before it (SemExpired: the hold was lost, though nobody took the permit
// back) or not (SemReleased), judged by the server's clock against the
// permit's expiry; either way both keys are gone, and a second release
// finds nothing (SemGone).
func TestSemReleaseTellsAPermitWhoseLeaseRanOut(t *testing.T) {
	rc := redistest.Start(t).Client(t)
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		leaseMs string
		wait    time.Duration
		want    int64
	}{
		{"within its lease", "60000", 0, SemReleased},
		{"after its lease", "100", 250 * time.Millisecond, SemExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := semTestKeys("release:" + c.name)
			semAcquired(t, rc, k, "p1", c.leaseMs)
			time.Sleep(c.wait)
			got, err := SemRelease(ctx, rc, k, "p1", "publish")
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			n, err := redistest.Do(t, rc, "EXISTS", k.Holders, k.Permits).AsInt64()
			require.NoError(t, err)
			assert.Zero(t, n, "both keys deleted")
			got, err = SemRelease(ctx, rc, k, "p1", "publish")
			require.NoError(t, err)
			assert.Equal(t, int64(SemGone), got)
		})
	}
}
