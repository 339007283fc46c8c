//go:build !mutant_renew_round_wait

package engine

// RenewRoundWait is false in every real build: see
// renew_roundwait_mutant_on.go. Exported so that redlock's renewer behaves
// the same.
const RenewRoundWait = false
