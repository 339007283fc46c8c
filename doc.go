// Package redisync is Redisson's family of distributed locks and
// synchronizers for Go, on the rueidis client.
//
// A Client is the shared engine for one Redis deployment. Lock types live in
// their own packages and are built on a Client:
//
//	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	c := redisync.New(rc)   // no I/O; the caller keeps owning rc
//	defer c.Close()
//	mu := rlock.New(c, "orders:42")
//	err := redisync.Do(ctx, mu, func(ctx context.Context) error {
//		// ctx is cancelled with cause ErrLockLost if the lock is lost
//		return writeWithToken(ctx, mu.Token())
//	})
//
// The primitives:
//
//   - rlock: lock, reentrant on request (Redisson's RLock layout);
//   - fairlock: lock granted in arrival order;
//   - rwlock: read-write lock (Redisson's RReadWriteLock layout);
//   - semaphore: leased, identified permits;
//   - multilock: all or nothing over any Lockers, deadlock-free;
//   - redlock: quorum lock over independent masters.
//
// Every lock type implements Locker, so Do runs a function under any of
// them. The Client also takes a replication policy (WithWaitReplicas sends
// WAIT with each write on the same connection), an Observer for metrics
// (the redisyncotel module adapts it to OpenTelemetry) and a logger.
//
// # Ownership
//
// A handle (an *rlock.Mutex, ...) is used like a sync.Mutex: goroutines
// sharing it exclude each other, and a Lock on a held handle waits for its
// Unlock (in the process, bounded by ctx). Re-entry is asked for:
// WithReentrant (in rlock, fairlock and rwlock) makes the handle one owner
// whose every Lock nests, as Redisson's RLock, and WithOwner implies it. In
// Redis a handle is one owner, "<client id>:<n>" unless WithOwner sets it;
// an owner id that could be taken for a field or key the lock keeps beside
// its owners' is ErrInvalidOwner (each package's WithOwner says which).
// See the rlock package's "Ownership" section.
//
// # Leases and loss
//
// Without a fixed lease a hold is in watchdog mode: its lease is the Client's
// watchdog timeout, renewed every third of it in batches. When a renewal finds
// the hold gone, or cannot confirm it before the lease would run out by the
// local monotonic clock (less a drift margin of 1% + 2 ms), the hold's Done
// channel closes and Err returns ErrLockLost. How soon depends on how the
// hold was lost:
//
//   - expiry (renewals not confirmed: a partition, a paused server, a paused
//     process): before the lease can have run out on the server, so before
//     anyone can get in through expiry;
//   - a key that vanished by other means (DEL, FLUSHALL, UNLINK, eviction, a
//     restart or failover that lost it): at the next renewal, within lease/3
//     plus one round trip. Another client may take the lock inside that
//     window before the holder is told (measured: about 0.2 s with a 1.2 s
//     lease), and only the fencing token protects the resource then.
//
// A fixed-lease hold reports a loss when its lease runs out before Unlock.
//
// Handles that share an owner id (WithOwner, or a Redisson client on the
// same id) share one count in Redis — the sum of their holds — and one
// lease, the latest any of them set (a grant or renewal never shortens
// it). Each handle still judges its own hold by its own lease: one whose
// fixed lease runs out, or whose renewals go unconfirmed, by its clock
// reports the loss (Done, ErrLockLost) even while another handle keeps the
// key alive, and the Unlock that follows removes that handle's holds only,
// so the other handles hold on. A handle's Unlock releases only what its
// own Lock and TryLock calls were granted: on a handle that holds nothing —
// also one whose first Lock is still in flight — it returns ErrNotHeld and
// changes nothing. A hold a crashed process left under an owner id ends
// with its lease, or with ForceUnlock.
//
// # Waiting and permissions
//
// A waiter sleeps until a release wakes it by pub/sub (PUBLISH, or SPUBLISH
// on a Cluster), or until its bounded poll (WithMaxPoll) comes round, so a
// lost message costs at most one poll. The Redis user needs EVAL and EVALSHA
// on the lock keys, SUBSCRIBE (or SSUBSCRIBE) and PUBLISH (or SPUBLISH) on
// the lock channels, and TIME, PEXPIRE and the like inside scripts. If an
// ACL denies PUBLISH, releases still complete (the wake-up is skipped, never
// half of a release) and waiters fall back to polling; if it denies EVAL,
// every call fails with the server's NOPERM error (a *rueidis.RedisError).
//
// # Contexts
//
// Every method that takes a ctx — of every primitive, and Do — returns
// within UndoWait (250 ms) of its ctx's end, however the server behaves
// (stalled, cut off, gone): the bound is on the call, not on Redis. A call
// that ends with ctx.Err() leaves nothing behind: the grant it may have got
// is given back, its place in a queue is left, and within UndoWait that
// has landed before the call returns; past it a Client task finishes the
// undo, sending it again, paced and jittered, until the server answers —
// within a round trip of the server's return from a stall or a cut — for
// as long as it can matter (until the lease, or the waiter timeout of a
// queue's place, would end what it undoes anyway). Until then the name
// may show held or the owner queued; a server away longer than that leaves
// what it ran on its return to lapse with its own lease or waiter timeout.
// Unlock always releases: its ctx bounds only the wait for the reply, and
// a release whose caller has gone is sent again the same way. Close waits
// for the Client's tasks for at most CloseTimeout (2 s), then gives up the
// undos and releases it cannot finish (their holds expire with their
// leases, their places in queues with the waiter timeout).
//
// # Errors that pass and errors that stay
//
// Every wait — Lock and Acquire of each primitive, a latch's Await, a
// multilock's and a Redlock's rounds, the command's --wait — sorts errors
// the same way. An error that passes by itself (a connection refused, reset
// or timed out, a server loading or busy with a script, a failover's
// READONLY, a Cluster's MOVED, ASK, TRYAGAIN or CLUSTERDOWN, a flushed
// script cache) is retried after a jittered backoff within ctx, and ctx's
// end is then what the call returns. An error no retry changes (a key of
// another kind, NOPERM, OOM, a wrong password, ErrNotReplicated, a bad
// argument) is returned at once, naming the primitive and the name.
//
// # Safety
//
// A lease is not mutual exclusion: a holder paused longer than its lease (GC,
// SIGSTOP, a slow network) can still believe it holds the lock after another
// client took it. Every acquisition therefore carries a fencing token that is
// strictly greater than every token issued before for that name; the resource
// you protect should reject writes with a token lower than the highest it has
// seen. Tokens are server time in microseconds, raised above the last token
// when needed, so they rise across key expiry and restarts as long as the
// server clock does not step back by more than the gap between two grants.
package redisync
