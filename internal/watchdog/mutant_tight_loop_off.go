//go:build !mutant_renew_tight_loop

package watchdog

// tightLoop is false in every real build: see mutant_tight_loop_on.go.
const tightLoop = false
