// Package watchdog is redisync's lease-renewal engine: one per Client, shared
// by every hold of every lock kind.
//
// # How it works
//
// A hold registers a Lease with the time its lease was last confirmed (the
// moment the acquire command was sent, by the local monotonic clock). From
// then on the engine keeps two times per lease:
//
//   - due: confirmed + TTL/3, when the next renewal should be sent;
//   - deadline: confirmed + TTL − drift (drift = TTL/100 + 2 ms), the last
//     moment the hold can still be trusted without a new confirmation.
//
// One goroutine sleeps until the earliest due time or deadline. When it wakes
// it collects every lease due within the next TTL/6 — so holds taken at
// different moments ride in the same batch — groups them by Renewer, and hands
// each group to its Renewer in one call (for rlock: one pipelined round trip
// per node, one multi-key script per hash slot). Each renewal is scheduled
// from the time its request was sent, never by resetting a timer after the
// reply, so a slow reply cannot push the schedule past the lease.
//
// Outcomes, per lease:
//   - renewed: confirmed = send time of the renewal;
//   - gone (the server says the hold is not ours): lost at once;
//   - transient error (timeout, connection): retried every TTL/10 (at most
//     one second) until the deadline;
//   - deadline passed with no confirmation: lost.
//
// Loss is reported through the lease's OnLost callback, exactly once, and
// never after Remove returned. A Fixed lease is never renewed: it only
// reports loss at its deadline (a fixed-lease hold that outlives its lease).
//
// The engine knows nothing about lock kinds: a Renewer does the I/O.
package watchdog
