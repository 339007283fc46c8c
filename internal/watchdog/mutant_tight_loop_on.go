//go:build mutant_renew_tight_loop

package watchdog

// tightLoop re-introduces the retry storm of issue 12 (defect 7): a failed
// renewal is due again within the batching window, so the loop re-fires at
// once. Only for proving that the pace tests can fail.
const tightLoop = true
