package redisync_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// recorder keeps every event a Client reports.
type recorder = locktest.Recorder

func TestObserverSeesGrantsHandOffsReleasesRenewalsAndLosses(t *testing.T) {
	rec := &recorder{}
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	e := locktest.Setup(t, redisync.WithObserver(rec), redisync.WithLogger(logger),
		redisync.WithWatchdogTimeout(300*time.Millisecond))
	bg := locktest.Bg()

	a, b := rlock.New(e.C, "obs:lock"), rlock.New(e.C, "obs:lock")
	require.NoError(t, a.Lock(bg))
	got := make(chan error, 1)
	go func() { got <- b.Lock(bg) }()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, a.Unlock(bg))
	require.NoError(t, <-got)
	time.Sleep(200 * time.Millisecond) // at least one renewal of b
	e.Do(t, "DEL", "obs:lock")         // b is lost
	locktest.Eventually(t, 2*time.Second, func() bool { return b.Err() != nil }, "loss signalled")

	rw := rwlock.New(e.C, "obs:rw")
	require.NoError(t, rw.RLock(bg))
	require.NoError(t, rw.RUnlock(bg))
	s := semaphore.New(e.C, "obs:sem", 2)
	p, ok, err := s.TryAcquire(bg, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, p.Release(bg))

	assert.Equal(t, 2, rec.Count(redisync.EventAcquired, "rlock", nil))
	assert.Equal(t, 1, rec.Count(redisync.EventAcquired, "rlock", func(ev redisync.Event) bool {
		return ev.Waited && ev.Wait >= 40*time.Millisecond && ev.Name == "obs:lock"
	}), "one hand-off, after the wait")
	assert.Equal(t, 1, rec.Count(redisync.EventReleased, "rlock", func(ev redisync.Event) bool { return ev.Held >= 40*time.Millisecond }))
	assert.Equal(t, 1, rec.Count(redisync.EventLost, "rlock", func(ev redisync.Event) bool { return ev.Err != nil }))
	assert.Positive(t, rec.Count(redisync.EventRenewed, "lock", func(ev redisync.Event) bool { return ev.Count >= 1 }))
	assert.Equal(t, 1, rec.Count(redisync.EventAcquired, "rwlock.read", nil))
	assert.Equal(t, 1, rec.Count(redisync.EventReleased, "rwlock.read", nil))
	assert.Equal(t, 1, rec.Count(redisync.EventAcquired, "semaphore", nil))
	assert.Equal(t, 1, rec.Count(redisync.EventReleased, "semaphore", nil))
	logMu.Lock()
	defer logMu.Unlock()
	assert.Contains(t, logs.String(), "level=WARN msg=\"redisync: hold lost\" primitive=rlock name=obs:lock")
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
