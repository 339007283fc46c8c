package semaphore

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/redistest"
)

// Counts that Lua cannot add up exactly (or formats as "1e+17") are refused
// before any I/O, so no script fails half-way and leaves a permits hash
// without expiry; a capacity of MaxInt64 no longer reads back as -2^63.
func TestCountsBeyondWhatLuaRepresentsAreErrBadCountWithoutIO(t *testing.T) {
	e := setup(t)
	calls := func() int64 {
		return redistest.ScriptCalls(t, e.RC)
	}
	before := calls()
	for _, capacity := range []int{MaxPermits + 1, 1e17, math.MaxInt64} {
		s := New(e.C, "sem:huge", capacity)
		_, err := s.Acquire(bg(), 1)
		assert.ErrorIs(t, err, ErrBadCount, "capacity %d", capacity)
		_, _, err = s.TryAcquire(bg(), 1)
		assert.ErrorIs(t, err, ErrBadCount)
		_, err = s.Capacity(bg())
		assert.ErrorIs(t, err, ErrBadCount)
		_, err = s.Available(bg())
		assert.ErrorIs(t, err, ErrBadCount)
	}
	s := New(e.C, "sem:huge", 2)
	for _, n := range []int{MaxPermits + 1, 1e17, math.MaxInt64} {
		_, err := s.Acquire(bg(), n)
		assert.ErrorIs(t, err, ErrBadCount, "count %d", n)
		assert.ErrorIs(t, s.SetPermits(bg(), n), ErrBadCount, "SetPermits(%d)", n)
	}
	assert.Equal(t, before, calls(), "no script ran")
	assert.Zero(t, e.DBSize(t))

	// The largest values work and read back exactly.
	big := New(e.C, "sem:max", MaxPermits)
	p, err := big.Acquire(bg(), MaxPermits)
	if assert.NoError(t, err) {
		c, err := big.Capacity(bg())
		assert.NoError(t, err)
		assert.Equal(t, MaxPermits, c)
		assert.NoError(t, p.Release(bg()))
	}
}
