//go:build !mutant_shared_handle

package hold

// gateDisabled is true only in the mutant_shared_handle build, which takes
// the gates away to check that the tests notice (issue 12, defect 11).
const gateDisabled = false
