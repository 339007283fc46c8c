//go:build !mutant_multilock_forget

package multilock

// mutantForget is false in real builds; see mutant_forget_on.go.
const mutantForget = false
