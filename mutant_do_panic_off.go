//go:build !mutant_do_panic

package redisync

// doSkipsUnlockOnPanic is false: see mutant_do_panic_on.go.
const doSkipsUnlockOnPanic = false
