package engine

import "github.com/redisync/redisync/internal/keys"

// HolderInfo returns the holder-info hash of the lock named name (in its
// slot; see keys.HolderInfoPrefix) and what this Client's acquires record
// there: "" when it records nothing. Scripts are given the key either way,
// so that releases and force-unlocks clean up what other Clients wrote.
func (e *Engine) HolderInfo(name string) (key, value string) {
	key, _ = keys.Derived(keys.HolderInfoPrefix, name)
	return key, e.Config.HolderInfo
}
