package doccheck

import (
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/lockopt"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// TestPublicConstantsAreTheCodesValues: the public constants spell their
// numbers out, so that go doc shows them; the code decides with the
// internal ones. Each public literal must equal the value the code uses.
func TestPublicConstantsAreTheCodesValues(t *testing.T) {
	durations := []struct {
		name         string
		public, code time.Duration
	}{
		{"redisync.MinLease", redisync.MinLease, lockopt.MinLease},
		{"redisync.UndoWait", redisync.UndoWait, engine.UndoWait},
		{"redisync.CloseTimeout", redisync.CloseTimeout, engine.CloseTimeout},
		{"fairlock.DefaultWaiterTimeout", fairlock.DefaultWaiterTimeout, lockopt.DefaultWaiterTimeout},
		{"fairlock.MinWaiterTimeout", fairlock.MinWaiterTimeout, lockopt.MinWaiterTimeout},
		{"rwlock.DefaultWaiterTimeout", rwlock.DefaultWaiterTimeout, lockopt.DefaultWaiterTimeout},
		{"semaphore.DefaultWaiterTimeout", semaphore.DefaultWaiterTimeout, lockopt.DefaultWaiterTimeout},
	}
	for _, c := range durations {
		if c.public != c.code {
			t.Errorf("%s = %v, the code uses %v", c.name, c.public, c.code)
		}
	}
	lengths := []struct {
		name         string
		public, code int
	}{
		{"rlock.MaxNameLength", rlock.MaxNameLength, lockopt.MaxNameLength},
		{"fairlock.MaxNameLength", fairlock.MaxNameLength, lockopt.MaxNameLength},
		{"rwlock.MaxNameLength", rwlock.MaxNameLength, lockopt.MaxNameLength},
		{"semaphore.MaxNameLength", semaphore.MaxNameLength, lockopt.MaxNameLength},
		{"redlock.MaxNameLength", redlock.MaxNameLength, lockopt.MaxNameLength},
		{"ratelimit.MaxNameLength", ratelimit.MaxNameLength, lockopt.MaxNameLength},
		{"ratelimit.MaxKeyLength", ratelimit.MaxKeyLength, lockopt.MaxNameLength},
		{"rlock.MaxOwnerLength", rlock.MaxOwnerLength, lockopt.MaxOwnerLength},
		{"fairlock.MaxOwnerLength", fairlock.MaxOwnerLength, lockopt.MaxOwnerLength},
		{"rwlock.MaxOwnerLength", rwlock.MaxOwnerLength, lockopt.MaxOwnerLength},
	}
	for _, c := range lengths {
		if c.public != c.code {
			t.Errorf("%s = %d, the code uses %d", c.name, c.public, c.code)
		}
	}
}
