//go:build mutant_expired_grant

package hold

// expiredGrantReported re-introduces issue 12's defect 9: a grant whose lease had already run
// out by the client's clock when the reply came is reported as held. Only for proving that
// TestLockNeverReportsAGrantWhoseLeaseRanOut (rlock) can fail.
const expiredGrantReported = true
