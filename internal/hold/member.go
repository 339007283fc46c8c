package hold

import (
	"github.com/redisync/redisync/internal/engine"
	"github.com/redisync/redisync/internal/scripts"
)

// Member describes a lock handle whose hold can be taken together with
// others of the same Client in one script (rlock.Mutex): see AttemptAll.
type Member struct {
	Engine  *engine.Engine
	Hold    *Hold
	Request scripts.LockRequest
	// Gate is the handle's gate (nil when it has none): a multilock that
	// takes the hold with one script enters it as the handle's own Lock
	// would, so that goroutines locking the handle directly still wait.
	Gate *Gate
}

var describers []func(any) (*Member, bool)

// RegisterMember is called from a lock package's init with a function that
// recognises its handles.
func RegisterMember(describe func(any) (*Member, bool)) { describers = append(describers, describe) }

// MemberOf describes l if a registered lock package recognises it.
func MemberOf(l any) (*Member, bool) {
	for _, d := range describers {
		if m, ok := d(l); ok {
			return m, true
		}
	}
	return nil, false
}
