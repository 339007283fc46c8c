//go:build mutant_renew_batch_err

package engine

// batchErrFailsAll re-introduces issue 12's defect 6: one failing command
// (or node) makes the whole renewal batch Unknown, so every hold in it is
// lost at its deadline. Only for proving that the isolation tests can fail.
const batchErrFailsAll = true

// RenewBatchErrFailsAll tells other renewers (redlock) to behave the same.
const RenewBatchErrFailsAll = batchErrFailsAll
