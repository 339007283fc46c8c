//go:build mutant_redlock_unlock_deadlock

package redlock

// mutantUnlockDeadlock re-introduces a fixed defect, so that the tests that guard against
// it can be shown to fail: go test -tags mutant_redlock_unlock_deadlock ./redlock/
const mutantUnlockDeadlock = true
