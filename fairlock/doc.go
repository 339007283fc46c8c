// Package fairlock is a distributed lock granted in arrival order (FIFO), with lease renewal, a lost-lease signal and fencing tokens.
//
// Use it where rlock's free-for-all would let a busy client starve others,
// or where the order of work matters. It costs one queue entry per waiter and
// one wake-up channel per waiting owner.
//
//	mu := fairlock.New(c, "jobs:nightly")
//	if err := mu.Lock(ctx); err != nil { ... }
//	defer mu.Unlock(context.WithoutCancel(ctx))
//
// Ownership, leases, renewal, loss, fencing tokens, reentrancy and errors
// follow the rlock package exactly; what differs is who gets a free lock.
// In short (rlock's "Ownership" section says it in full): a handle is a
// sync.Mutex — goroutines sharing it exclude each other, and a Lock on a
// held handle waits for its Unlock before it joins the queue (it never
// queues behind its own handle) — unless WithReentrant or WithOwner makes
// every Lock of the handle nest; WithNonReentrant refuses such a Lock at
// once with redisync.ErrNonReentrant.
//
// # Guarantees
//
//   - Strict FIFO among live waiters: a free lock goes to the waiter that
//     joined the queue first, by the server's clock (TIME inside the
//     scripts; client clocks are never used).
//   - A live waiter is never evicted, however long it waits: each attempt of
//     a waiting Lock is a heartbeat, and Lock attempts at least every third
//     of the waiter timeout.
//   - A dead waiter (process killed, frozen, disconnected) is dropped once
//     its heartbeat is older than its waiter timeout (WithWaiterTimeout,
//     default 5 s). A dead head therefore delays the queue by at most that.
//   - Only the head is woken when the lock becomes free, on its own channel;
//     the others wait with a bounded poll, so there is no thundering herd.
//   - TryLock never joins the queue, and fails while anyone is queued. A Lock
//     that returns an error (cancelled, closed) has left the queue.
//   - Re-entering a held lock (WithReentrant, WithOwner) never queues behind
//     others, and a waiter granted so (another handle of its owner id took
//     the lock first) leaves the queue, as the head does when granted.
//
// # How it works
//
// For a lock named N (all keys share N's hash slot; H is N's hash tag, or N itself when it has none: our own keys carry the
// whole name after the tag, so no two names share a key):
//
//	N                                    hash: <owner> = hold count, "redisync:token" = token
//	                                     (the rlock layout), PTTL = lease
//	redisync_fair_queue:{H}:N            zset: owner -> arrival, server time in µs
//	redisync_fair_heartbeat:{H}:N        zset: owner -> heartbeat deadline, server time in ms
//	redisync_lock_token:{H}:N            the last token, kept briefly after a release
//	redisync_fair_channel:{H}:N:<owner>  the waiter's wake-up channel
//
// N is recognised as the rlock package describes (a read-write lock's hash
// is busy; a user's key, a semaphore or a Redlock is redisync.ErrWrongKind),
// and the queue, heartbeat and token keys must be of their type with an
// expiry, or the script refuses with ErrWrongKind before writing anything.
//
// Every script first drops the waiters whose heartbeat deadline has passed
// (ZRANGEBYSCORE on the heartbeat zset, ZREM from both). Acquire
// (fair_acquire.lua) then grants the lock if the owner already holds it
// (re-entry; a place of the owner's in the queue goes), or if the hash is
// absent and the queue is empty or headed by the owner (who leaves the
// queue). Otherwise a waiting Lock adds itself to
// the queue (ZADD with an arrival strictly after the current tail) unless it
// is already there, sets its heartbeat deadline to now + waiter timeout, and
// raises both zsets' expiry to at least the waiter timeout, so they vanish by
// themselves when every waiter is gone. The reply is a wait hint: the lock's
// PTTL, or, when the lock is free but another waiter is first in line, the
// time until that waiter's heartbeat would lapse.
//
// Release (fair_release.lua) follows rlock's contract (an expected hold
// count makes retries harmless); the final release deletes the hash, drops
// dead waiters and PUBLISHes "0" on the first live waiter's channel only
// (SPUBLISH on a Cluster). When dead waiters are dropped while the lock is
// free, the new head is woken the same way. A Lock that gives up runs
// queue_leave.lua (ZREM from both zsets; if it was the head, the next
// waiter is woken to check its turn).
//
// The watchdog renews the hash exactly as for rlock (one batched script per
// hash slot). The queue is not renewed: waiters keep it alive by
// heartbeating.
//
// # Redisson's fair queue (WithRedissonQueue)
//
// Redisson's fair lock keeps a list plus a zset of deadlines computed from
// client clocks, gives each waiter a 5-minute slot, and stalls the queue
// behind a dead waiter for that long. By default this package's queue is its
// own (the guarantees above); the lock hash is shared, so a Redisson RFairLock
// and a Mutex on one name exclude each other, but each serves its own waiters.
//
// WithRedissonQueue(wait) makes a handle wait in Redisson's queue instead, so
// Java and Go waiters on one name are served in one arrival order:
//
//	redisson_lock_queue:{N}              list of owner ids, arrival order
//	redisson_lock_timeout:{N}            zset owner -> deadline (epoch ms)
//	redisson_lock__channel:{N}:<owner>   the waiter's wake-up channel
//
// ({N}: Redisson's rule, N itself when N contains '{'.) The scripts
// (fair_redisson_*.lua) keep Redisson's deadline arithmetic, with the server's
// TIME for "now"; the guarantees are then Redisson's, not the ones above: no
// heartbeats (a dead waiter delays the queue by up to wait plus the lease
// the lock had left when it joined), and Java clients
// prune the queue by their own clocks. docs/redisson.md says exactly what a
// mixed queue guarantees.
package fairlock
