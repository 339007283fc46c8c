//go:build mutant_op_wait

package hold

// opWaitIgnoresCtx re-introduces the wait for the op lock that ignored ctx:
// a Lock outlived its deadline by up to the settle bound while a Client
// task undid an earlier attempt against a dead server
// (rlock TestLockReturnsWhenCtxEndsWhileAnUndoRuns).
const opWaitIgnoresCtx = true
