//go:build !mutant_keyspace_nomode && !mutant_keyspace_noacl

package scripts

// keyspaceMutations is empty in a normal build.
var keyspaceMutations [][2]string
