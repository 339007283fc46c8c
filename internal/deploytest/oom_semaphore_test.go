package deploytest

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/semaphore"
)

// TestSemaphoreInspectionsAreRefusedWholeUnderOOM shows the one kind whose
// inspections do not answer under out of memory, as docs/keys-and-permissions.md
// says: a semaphore's Available, IsLocked and Holders run sem_state.lua,
// which takes back expired holders' permits before it reports — a write
// script, which Redis refuses whole under maxmemory. The refusal names the
// semaphore, and the semaphore's keys are left as they were.
func TestSemaphoreInspectionsAreRefusedWholeUnderOOM(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	bg := context.Background()
	c := redisync.New(rc)
	defer c.Close()
	s := semaphore.New(c, "oomsem:s", 3)
	p, err := s.Acquire(bg, 1)
	require.NoError(t, err)
	dump := func() string {
		var b strings.Builder
		keys, err := redistest.Do(t, rc, "KEYS", "*oomsem*").AsStrSlice()
		require.NoError(t, err)
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := redistest.Do(t, rc, "DUMP", k).ToString()
			b.WriteString(k + "=" + v + ";")
		}
		return b.String()
	}
	redistest.ExhaustMemory(t, rc)
	before := dump()
	_, err = s.Available(bg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OOM")
	assert.Contains(t, err.Error(), "oomsem:s")
	_, err = s.IsLocked(bg)
	require.Error(t, err)
	assert.Equal(t, before, dump(), "the refused inspection changed the semaphore's keys")
	redistest.Do(t, rc, "CONFIG", "SET", "maxmemory", "0")
	require.NoError(t, p.Release(bg))
}
