//go:build !mutant_settle_deadline

package engine

// settleBoundWhileAlive is false: see settle_mutant_on.go.
const settleBoundWhileAlive = false
