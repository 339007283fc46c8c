//go:build !mutant_release_latch

package hold

// latchDisabled is false: see mutant_release_latch_on.go.
const latchDisabled = false
