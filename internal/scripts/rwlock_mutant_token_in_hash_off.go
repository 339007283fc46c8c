//go:build !mutant_rwlock_token_in_hash

package scripts

// rwTokenInHash is false: the token lives in the phase key only.
const rwTokenInHash = false
