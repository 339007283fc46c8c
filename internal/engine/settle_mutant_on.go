//go:build mutant_settle_deadline

package engine

// settleBoundWhileAlive re-introduces issue 12's defect 10: an acquire in
// flight is bounded by CompensateTimeout even while the caller's ctx is
// alive, so a server stall surfaces as context.DeadlineExceeded. Only for
// proving that TestLockWithALiveContextRidesOutAServerStall can fail.
const settleBoundWhileAlive = true
