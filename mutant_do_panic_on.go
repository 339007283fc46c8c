//go:build mutant_do_panic

package redisync

// doSkipsUnlockOnPanic re-introduces issue 12's defect 4: a panic in Do's
// function skips the Unlock, and the lock stays held and renewed. Only for
// proving that TestDoReleasesTheLockWhenFnPanics can fail.
const doSkipsUnlockOnPanic = true
