package semaphore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoredCapacityWinsOverEveryNewsOwn: two Clients whose New gave one
// name different capacities share the one stored by the first call (the
// common acquire trusts New's capacity only for a semaphore with no keys
// at all): the other never grants more than it, by either path (one
// permit, several), also after every permit was released and the holders'
// keys are gone.
func TestStoredCapacityWinsOverEveryNewsOwn(t *testing.T) {
	for _, first := range []int{1, 5} {
		e := setup(t)
		other := map[int]int{1: 5, 5: 1}[first]
		name := "sem:mismatch"
		a := New(e.C, name, first, WithLease(time.Minute))
		b := New(e.Client(t), name, other, WithLease(time.Minute))
		ctx := bg()
		pa, err := a.Acquire(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, pa.Release(ctx)) // the keys are gone; the configuration stays
		require.True(t, holderKeysGone(t, e, a))
		var held []*Permit
		for range first + 2 {
			p, ok, err := b.TryAcquire(ctx, 1)
			require.NoError(t, err)
			if ok {
				held = append(held, p)
			}
		}
		assert.Len(t, held, first, "New(%d) granted past the stored capacity %d", other, first)
		for _, p := range held {
			require.NoError(t, p.Release(ctx))
		}
		if other > first {
			_, _, err := b.TryAcquire(ctx, other)
			assert.ErrorIs(t, err, ErrTooMany, "a request above the stored capacity")
		}
		c, err := b.Capacity(ctx)
		require.NoError(t, err)
		assert.Equal(t, first, c)
	}
}
