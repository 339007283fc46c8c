//go:build !mutant_latch_wake_one

package latch

// wakeOne is false: a latch message wakes every local waiter (Hub.JoinAll).
// The mutant_latch_wake_one build joins as a lock waiter does, so Redisson's
// "0" wakes one waiter per Client and the rest sleep out the poll
// (TestThousandWaitersReleasedByOneCountDown and TestModelLatchAgainstRedis
// fail).
const wakeOne = false
