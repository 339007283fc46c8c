package redisync_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
)

// Two goroutines of rueidis's own outlive its closed Cluster clients: one
// closes the connections a topology refresh dropped after sleeping 5 s, one
// sleeps out a reconnect backoff. They are not ours to await.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

func TestDoReturnsLockErrorWithoutRunningFn(t *testing.T) {
	srv := redistest.Start(t)
	c := redisync.New(srv.Client(t))
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := redisync.Do(ctx, rlock.New(c, "do:cancelled"), func(context.Context) error { ran = true; return nil })
	assert.Equal(t, context.Canceled, err)
	assert.False(t, ran)
}

func TestDoReturnsFnErrorAndUnlocks(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	c := redisync.New(rc)
	defer c.Close()
	boom := errors.New("boom")
	mu := rlock.New(c, "do:fn-error")
	err := redisync.Do(context.Background(), mu, func(context.Context) error { return boom })
	assert.ErrorIs(t, err, boom)
	n, _ := redistest.Do(t, rc, "EXISTS", "do:fn-error").AsInt64()
	assert.Zero(t, n)
	assert.ErrorIs(t, mu.Err(), redisync.ErrNotHeld)
}

func TestClientIDIsAUUIDAndCloseIsIdempotent(t *testing.T) {
	srv := redistest.Start(t)
	c := redisync.New(srv.Client(t))
	assert.Len(t, c.ID(), 36)
	assert.NoError(t, c.Close())
	assert.NoError(t, c.Close())
}
