//go:build mutant_unlock_ctx

package hold

// unlockHonoursCtx re-introduces issue 12's defect 2: Unlock with a ctx that is already done
// returns ctx.Err() and releases nothing, so the watchdog keeps renewing. Only for proving that
// TestUnlockWithAnEndedContextStillReleases (rlock) can fail.
const unlockHonoursCtx = true
