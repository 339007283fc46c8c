//go:build !mutant_unlock_ctx

package hold

// unlockHonoursCtx is false: see mutant_unlock_ctx_on.go.
const unlockHonoursCtx = false
