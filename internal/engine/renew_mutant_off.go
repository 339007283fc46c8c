//go:build !mutant_renew_batch_err

package engine

// batchErrFailsAll is false in every real build: see renew_mutant_on.go.
const batchErrFailsAll = false

// RenewBatchErrFailsAll tells other renewers (redlock) to behave the same.
const RenewBatchErrFailsAll = batchErrFailsAll
