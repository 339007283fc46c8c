package redisync_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
)

// renewalCounter counts the watchdog's renewal rounds as the Observer sees
// them: one Renewed and/or one RenewFailed event per round (per node for
// redlock), whatever the number of holds or commands in it.
type renewalCounter struct {
	mu      sync.Mutex
	renewed  map[string]int
	failed   map[string]int
	failedAt map[string][]time.Time
}

func newRenewalCounter() *renewalCounter {
	return &renewalCounter{renewed: map[string]int{}, failed: map[string]int{}, failedAt: map[string][]time.Time{}}
}

func (c *renewalCounter) Observe(ev redisync.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Kind {
	case redisync.EventRenewed:
		c.renewed[ev.Primitive]++
	case redisync.EventRenewFailed:
		c.failed[ev.Primitive]++
		c.failedAt[ev.Primitive] = append(c.failedAt[ev.Primitive], time.Now())
	}
}

// failedBetween counts the failed rounds of layout reported in [from, to).
func (c *renewalCounter) failedBetween(layout string, from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, at := range c.failedAt[layout] {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

func (c *renewalCounter) counts(layout string) (renewed, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.renewed[layout], c.failed[layout]
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestRenewalWrongTypeKeyCostsOnlyItsOwnHold (issue 12, defect 6): one lock
// key of a 50-hold renewal batch is overwritten with a string. Before the
// fix the batch script aborted with WRONGTYPE and every hold of the batch
// was lost at its deadline; now that hold alone is reported lost (the key
// is not this lock any more) and the other 49 stay held for three leases.
func TestRenewalWrongTypeKeyCostsOnlyItsOwnHold(t *testing.T) {
	const lease, n, victim = time.Second, 50, 17
	e := locktest.Setup(t, redisync.WithWatchdogTimeout(lease))
	bg := locktest.Bg()
	mus := make([]*rlock.Mutex, n)
	for i := range mus {
		mus[i] = rlock.New(e.C, fmt.Sprintf("renewal:wrongtype:%d", i))
		require.NoError(t, mus[i].Lock(bg))
	}
	e.Do(t, "SET", mus[victim].Name(), "not a lock any more")

	select {
	case <-mus[victim].Done():
		assert.ErrorIs(t, mus[victim].Err(), redisync.ErrLockLost)
	case <-time.After(3 * lease):
		t.Fatal("the overwritten hold was not reported lost")
	}
	// Three leases: the others are renewed across them, in the same batches
	// as the overwritten key was.
	end := time.Now().Add(3 * lease)
	for time.Now().Before(end) {
		for i, mu := range mus {
			if i != victim && isDone(mu.Done()) {
				t.Fatalf("hold %d lost (%v) because of another key's type", i, mu.Err())
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, mu := range mus {
		if i == victim {
			continue
		}
		assert.Greater(t, e.PTTL(t, mu.Name()), int64(0), "hold %d's key alive", i)
		require.NoError(t, mu.Unlock(bg))
	}
	v, _ := e.Do(t, "GET", mus[victim].Name()).ToString()
	assert.Equal(t, "not a lock any more", v, "another's key is never touched")
	e.Do(t, "DEL", mus[victim].Name())
	e.WaitEmpty(t)
}
