//go:build !mutant_op_wait

package hold

// opWaitIgnoresCtx is false: see mutant_op_wait_on.go.
const opWaitIgnoresCtx = false
