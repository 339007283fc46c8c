//go:build mutant_acquire_transport

package engine

// acquireGivesUpOnTransport re-introduces the second half of issue 12's
// defect 10: a transient transport error (a server restart) ends a waiting
// Lock instead of being retried within ctx. Only for proving that
// TestLockWaitsAcrossAServerRestart can fail.
const acquireGivesUpOnTransport = true
