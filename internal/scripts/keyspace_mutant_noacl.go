//go:build mutant_keyspace_noacl

package scripts

// keyspaceMutations re-introduces issue 13's defect 6 for the tests' teeth:
// no script checks its writes against the ACL before the first, so a
// denied command in the middle leaves half a change behind.
var keyspaceMutations = [][2]string{{
	"  if not redis.acl_check_cmd then -- before Redis 7",
	"  if true then",
}}
