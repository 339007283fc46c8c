//go:build mutant_keyspace_nomode

package scripts

// keyspaceMutations re-introduces issue 13's defect 1 for the tests' teeth:
// the read-write lock reads a hash without a "mode" field as free, so it
// writes into a user's hash or an rlock's.
var keyspaceMutations = [][2]string{{
	"  return lock_shape(key) -- rw_shape",
	"  if redis.call('hexists', key, 'mode') == 0 then return 'none' end return lock_shape(key)",
}}
