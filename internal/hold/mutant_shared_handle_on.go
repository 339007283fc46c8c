//go:build mutant_shared_handle

package hold

// gateDisabled re-introduces issue 12's defect 11 for the tests to find:
// no handle has a gate, so goroutines sharing a handle re-enter its hold.
const gateDisabled = true
