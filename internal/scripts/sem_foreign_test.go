package scripts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/redistest"
)

// TestSemReleaseLeavesAKeyWithoutExpiryAlone: a holders zset or permits
// hash without an expiry is no key of ours (keyspace.lua's foreign: every
// key of ours has one; the semaphore's rare paths answer WRONGKIND for
// it), whatever it holds — also the permit being released, as when an
// operator PERSISTs the keys to keep them, or copies them back from a
// dump. The release answers WRONGKIND and deletes nothing, as its rare
// path does; its common path (the only permit, one DEL) must not take
// such a key for its own either.
func TestSemReleaseLeavesAKeyWithoutExpiryAlone(t *testing.T) {
	t.Skip("defect: the common release (the only permit) DELs a holders zset or permits hash without expiry that its rare path refuses as WRONGKIND (low: the keys hold our permit id; pick one answer for both paths)")
	for _, key := range []string{"holders", "permits"} {
		t.Run(key, func(t *testing.T) {
			rc := redistest.Start(t).Client(t)
			ctx := context.Background()
			k := semTestKeys("foreign:persisted-" + key)
			semAcquired(t, rc, k, "p1", "60000")
			persisted := map[string]string{"holders": k.Holders, "permits": k.Permits}[key]
			redistest.Do(t, rc, "PERSIST", persisted)
			_, err := SemRelease(ctx, rc, k, "p1", "publish")
			assert.ErrorIs(t, err, errs.ErrWrongKind, "a key without expiry taken for the semaphore's")
			n, err := redistest.Do(t, rc, "EXISTS", k.Holders, k.Permits).AsInt64()
			require.NoError(t, err)
			assert.EqualValues(t, 2, n, "the release deleted a key that is not its own")
		})
	}
}
