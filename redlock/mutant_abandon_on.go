//go:build mutant_redlock_abandon

package redlock

// mutantAbandon re-introduces a fixed defect, so that the tests that guard against
// it can be shown to fail: go test -tags mutant_redlock_abandon ./redlock/
const mutantAbandon = true
