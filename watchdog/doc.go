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
// One goroutine sleeps until the earliest due time or deadline. Leases
// waiting for a renewal sit in buckets of one due time each, in a heap by
// that time — the leases a round confirmed share its send time, so they go
// back as one bucket, and a renewal moves a lease in constant time; a round
// in flight is watched by the earliest deadline among its leases; and the
// leases whose deadline can come before they are sent (in backoff, Fixed)
// sit in a heap by deadline. A wake-up looks only at the fronts, never at
// every lease. When a lease is
// due, the round it starts also takes the leases due within the next TTL/6,
// up to 4,096 of them — so holds taken at different moments ride in the same
// batch, while a million holds are renewed in rounds that follow their due
// times instead of one burst sent early — groups them by Renewer, and hands
// each group to its Renewer in one call (for rlock: multi-key scripts of up
// to 256 holds per hash slot, pipelined on each node's connection; for
// redlock: one script call per node, the nodes in parallel). Each renewal is scheduled from the time
// its request was sent, never by resetting a timer after the reply, so a slow
// reply cannot push the schedule past the lease.
//
// # Client cost
//
// A round looks at each of its leases a few times — sent, its command
// built, its result settled — and at each hold's record bookkeeping only
// when a record may be due (one renewal in twelve). Both orders of the
// schedule are one heap implementation that compares times kept in its
// own array, the lease's times are monotonic nanoseconds, and a round
// reuses the arrays of the rounds before it (its batch, its bucket, its
// commands' arguments and results), so renewing a hold makes no garbage of
// its own: with hundreds of megabytes of live holds every collection scans
// them all, and garbage is what starts collections. What a round still
// allocates is the client library's: each command's argument list and its
// reply's array. `make watchdog N=... LEASE=... WINDOW=...` (bench/)
// measures it: lost holds, client and server CPU, heap per hold, GC.
//
// # Outcomes
//
// A Renewer reports one Result per lease, and each lease is judged by its
// own result only: a failing script, slot, shard or Redlock node makes only
// the leases it carried Unknown, never its neighbours in the batch.
//
//   - Alive: confirmed = send time of the renewal.
//   - Gone (the server says the hold is not ours — deleted, expired, or the
//     key now holds another type): lost at once.
//   - Unknown (a timeout, a connection error, an error reply such as BUSY or
//     OOM to the command that carried it): retried at the pace below until
//     the deadline.
//   - Deadline passed with no confirmation: lost, whatever is in flight.
//
// A renewal waits for its replies at most TTL/3: a command that hangs (a
// paused shard, a stopped node) is given up then, while a lease renewed on
// time still has about two thirds of its lease left when the round is sent.
// The engine's Renewers are StreamRenewers: they hand over each lease's
// result as soon as its own command has answered (on a Cluster each hash
// slot's commands go out on their own, since a rueidis DoMulti returns only
// when every node has answered; a Redlock hold as soon as its votes decide
// it), and the lease is settled then. A hung command so delays only its own
// leases: a paused master never holds back the answers of the healthy ones,
// and a lease near its deadline is not lost while its answer has arrived.
// A Renewer that returns all
// results at once is waited for no longer than the earliest deadline in its
// batch.
//
// # Pace of retries
//
// A lease whose renewal got no answer is retried after RetryInterval — a
// tenth of its TTL, at most one second — stretched by a random share of up to
// RetryJitter (25%), drawn once per failed batch so that the batch's leases
// stay together and Clients that lost the same server do not retry in step.
// Until then the lease is in backoff: the TTL/6 batching window does not pull
// it forward, so a Client whose server is down sends no renewal scripts, or
// dial attempts, in a tight loop. A lease in backoff joins a batch that goes
// to its Renewer anyway when its retry is less than half a RetryInterval
// away, so leases that failed in different batches — every batch fails while
// a server is down — converge on one round trip per RetryInterval instead of
// one per batch. While a server is unreachable a Client so sends it about one
// renewal round per RetryInterval: at most ten per lease, and at most about
// one per second for the default 30 s lease.
//
// Loss is reported through the lease's OnLost callback, exactly once, and
// never after Remove returned. A Fixed lease is never renewed: it only
// reports loss at its deadline (a fixed-lease hold that outlives its lease);
// it is handed to its Renewer once, a third of its lease after the grant,
// for its holder record (redisync.HolderInfo), whose outcome is not judged.
//
// The engine knows nothing about lock kinds: a Renewer does the I/O. It is
// internal to this module and exports nothing here: a Client owns one, and
// every hold registers with it; what a user sets is the Client's
// (redisync.WithWatchdogTimeout) and what a user sees is each hold's Done
// and Err, and the Client's Observer events. This package keeps the
// description.
package watchdog
