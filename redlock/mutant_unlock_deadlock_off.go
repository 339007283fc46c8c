//go:build !mutant_redlock_unlock_deadlock

package redlock

// mutantUnlockDeadlock is false in real builds; see mutant_redlock_unlock_deadlock_on.go.
const mutantUnlockDeadlock = false
