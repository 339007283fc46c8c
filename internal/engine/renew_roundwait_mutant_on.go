//go:build mutant_renew_round_wait

package engine

// RenewRoundWait re-introduces the paused-Cluster-master defect of issue 12:
// a renewal round on a Cluster goes out as one DoMulti, whose replies come
// back only when every node has answered or the round's bound has passed;
// the NOSCRIPT fallback follows with the spent context, and no result is
// handed to the watchdog before the round ends. A paused master so costs
// the holds on the healthy ones. Only for proving that the tests can fail.
const RenewRoundWait = true
