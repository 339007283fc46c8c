//go:build !mutant_stall_blind

package redlock

// mutantStallBlind is false in real builds; see mutant_stall_blind_on.go.
const mutantStallBlind = false
