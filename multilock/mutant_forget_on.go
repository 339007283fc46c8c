//go:build mutant_multilock_forget

package multilock

// mutantForget re-introduces a fixed defect (Unlock forgot the components
// whose release failed), so that the test that guards against it can be
// shown to fail: go test -tags mutant_multilock_forget ./multilock/
const mutantForget = true
