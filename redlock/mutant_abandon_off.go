//go:build !mutant_redlock_abandon

package redlock

// mutantAbandon is false in real builds; see mutant_redlock_abandon_on.go.
const mutantAbandon = false
