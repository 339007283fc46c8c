//go:build !mutant_acquire_transport

package engine

// acquireGivesUpOnTransport is false: see acquire_mutant_on.go.
const acquireGivesUpOnTransport = false
