package rlock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// TestLockWaitsOutAFailoversReadonly: a master demoted by a failover
// answers writes with READONLY until the client follows the new master (or,
// here, until it is promoted again): the wait loop's classification calls
// that transient, so Lock retries it within ctx instead of returning it;
// TryLock, one attempt, reports it. A permanent error (a key of another
// kind) is still returned by Lock at once.
func TestLockWaitsOutAFailoversReadonly(t *testing.T) {
	e := setup(t)
	other := redistest.Start(t)
	host, port, _ := strings.Cut(other.Addr(), ":")
	redistest.Do(t, e.RC, "REPLICAOF", host, port)
	m := New(e.C, "ro:lock")
	_, err := m.TryLock(bg())
	require.ErrorContains(t, err, "READONLY")

	ctx, cancel := context.WithTimeout(bg(), 20*time.Second)
	defer cancel()
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-locked:
		t.Fatalf("Lock returned %v while the server was a replica", err)
	default:
	}
	redistest.Do(t, e.RC, "REPLICAOF", "NO", "ONE")
	require.NoError(t, <-locked)
	require.NoError(t, m.Unlock(bg()))

	redistest.Do(t, e.RC, "SET", "ro:data", strconv.Itoa(1))
	start := time.Now()
	err = New(e.C, "ro:data").Lock(ctx)
	assert.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, err, redisync.ErrWrongKind)
}
