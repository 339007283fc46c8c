//go:build mutant_latch_wake_one

package latch

// wakeOne is true: the re-introduced bug (see mutant_wake_one_off.go).
const wakeOne = true
