// Package rlock is a distributed lock (Redisson's RLock) with lease
// renewal, a lost-lease signal and fencing tokens.
//
//	mu := rlock.New(c, "orders:42")              // no I/O; share it like a sync.Mutex
//	err := redisync.Do(ctx, mu, func(ctx context.Context) error {
//		return store.Write(ctx, order, mu.Token()) // ctx ends if the lock is lost
//	})
//
// # Ownership: a handle is a sync.Mutex
//
// A Mutex is used like a sync.Mutex: goroutines may share one handle, and
// its Lock and Unlock exclude them from each other as well as from every
// other handle and process. A Lock on a handle that is already held — by
// another goroutine, or by the same code path — waits for that hold's Unlock
// (bounded by ctx, like any wait) before it asks Redis; TryLock then
// reports false without I/O. Unlock may come from any goroutine. A hold
// that was lost stays the handle's until its Unlock (which reports
// redisync.ErrLockLost): as with sync.Mutex, the holder must unlock, and the
// next Lock on the handle waits until it has.
//
// Re-entry is asked for, never inferred: WithReentrant makes the handle one
// owner whose every Lock nests, Redisson's RLock semantics — each Lock
// returns at once with the hold count one higher and the hold's token, and
// needs its own Unlock; goroutines sharing such a handle do not exclude each
// other. WithOwner implies it: handles (and Redisson clients) that share an
// owner id are one owner and nest into its hold. WithNonReentrant makes a
// Lock on a held handle fail at once with redisync.ErrNonReentrant instead
// of waiting. Re-entry is not carried in a context: goroutines started
// inside a critical section inherit its context and would all re-enter. A
// Lock on such a handle whose hold was lost, before that hold's Unlock,
// nests past it: the new hold needs its own Unlock, and the lost hold's
// Unlock, after it, reports redisync.ErrLockLost.
//
// In Redis a handle is one owner, "<client uuid>:<n>" unless WithOwner sets
// it (so handles of other processes, or a later run, nest into one hold;
// each Unlock releases a hold of its own handle only, see the root
// package's "Leases and loss"). The local wait
// exists because Redis alone cannot tell two goroutines of one owner apart.
// An owner id is a field of the lock's hash beside the lock's own fields, so
// ids that could be taken for one ("mode", "redisync:...", "...:write", see
// WithOwner) are refused with redisync.ErrInvalidOwner before any I/O.
//
// # Lease
//
// By default a hold's lease is the Client's watchdog timeout (30 s),
// renewed every third of it until the last Unlock; WithLease gives each
// hold a fixed lease without renewal.
// When a hold is lost — its key deleted or expired, renewal not confirmed
// before the lease minus a drift margin, or the Client closed — Done closes
// and Err matches redisync.ErrLockLost: before the lease can run out on the
// server when renewals fail, and within lease/3 plus a round trip when the key
// vanished (DEL, FLUSHALL, a restart without persistence) — in that case
// another client may get in first, and the fencing token protects the
// resource (see the root package's "Leases and loss").
//
// # How it works
//
// For a lock named N ({N} is N's hash tag, or N in braces when it has none,
// as Redisson names it; H is N's hash tag, or N itself when it has none: our own keys carry the
// whole name after the tag, so no two names share a key):
//
//	N                             hash: "<owner>" = hold count, "redisync:token" = fencing
//	                              token of the current hold; PTTL = the lease
//	redisson_lock__channel:{N}    wake-up channel (Redisson's; "x" and "{x}" share it, as
//	                              in Redisson: a spurious wake-up at most)
//	redisync_lock_token:{H}:N     the last token, kept 10 s after a release (after the
//	                              token's own time, when the server clock is behind it)
//
// Every script first checks what N holds (docs/keys-and-permissions.md): a hash
// with an expiry and no "mode" field is a lock; a read-write lock's hash
// (with "mode") is busy, so rlock, fairlock and rwlock on one name exclude
// each other by the hash; anything else — a user's hash without expiry, a
// key of another type, a semaphore's configuration, a Redlock — makes
// Lock and TryLock return redisync.ErrWrongKind and ForceUnlock refuse it
// the same way. Nothing is written before every key has been checked and
// every write command cleared with the ACL (an error names a denied one).
//
// Acquire (rlock_acquire.lua): if N is absent, HSET owner 1 and a new token,
// PEXPIRE lease; if the owner's field exists, HINCRBY (the lease is never
// shortened, the token kept); otherwise reply with N's PTTL. A waiting Lock
// joins the Client's subscription to the channel (SUBSCRIBE, or SSUBSCRIBE
// on a Cluster), waits for its confirmation, tries again, then waits for a
// message or min(PTTL, MaxPoll, ctx) before each further attempt.
//
// Release (rlock_release.lua) acts only on the hold it belongs to: it
// carries the hold's fencing token, and for an owner only this handle uses
// the hold count it expects, so a release sent again after a lost reply
// finds one less and does nothing. A handle with WithOwner may share its
// owner id with other handles (or a Redisson client), whose counts mix; it
// keeps a latch instead: a field "redisync:latch:<handle id>" of N holding
// its last request id and outcome, which a repeated release replays and
// the undo of an acquire consults; it goes with the
// handle's last hold. Two handles of one owner thus each release exactly
// their own holds. The last release DELs N
// (latch fields go with it) and PUBLISHes "0" (SPUBLISH on a Cluster), which
// wakes one waiter. The watchdog renews many holds with one rlock_renew.lua
// call per hash slot, each checking owner and token, in one pipelined round
// trip.
//
// # Unlock
//
// Unlock always releases. It ends the hold locally at once — the count
// drops, and after the last Unlock renewal stops, Done closes and Err is
// ErrNotHeld — and sends the release whatever ctx says: ctx bounds only how
// long Unlock waits for Redis's reply. When ctx is already done, or ends
// first, Unlock returns ctx.Err(): the hold has ended locally, the release
// completes in the background (a Client task, bounded by 2 s after ctx's
// end), and Client.Close waits for it (for at most redisync.CloseTimeout;
// a release still unanswered then is given up, and the hold expires with
// its lease). So the everyday
//
//	defer mu.Unlock(ctx) // ctx: a request's context, perhaps cancelled by now
//
// never leaves the lock held. A release that gets no reply at all (the
// server unreachable past that bound) stays queued on the handle and is
// sent again, as the same request, before the handle's next Lock or Unlock;
// meanwhile the lock expires within its lease, since renewal has stopped.
// Releases always reach Redis in Unlock order and before the handle's next
// acquire.
//
// The fencing token is max(last + 1, server TIME in µs), computed in the
// acquire script: tokens of a name strictly increase across releases,
// expiry, restarts without persistence and script flushes, as long as the
// server clock does not step back by more than the gap between two grants.
//
// A cancelled Lock (or TryLock) returns ctx.Err() unwrapped, within
// redisync.UndoWait of its ctx's end. An acquire already sent is never
// abandoned: its reply says whether it was granted, and a grant nobody
// wants is given back with an owner-checked release — by the caller when
// the reply is in, or by a Client task when ctx ends first, which Lock
// waits for up to UndoWait (Client.Close waits for those tasks). Nothing is
// left behind, and when Lock returns the grant is already given back —
// unless the server did not answer within UndoWait (a stall, a cut
// network): then the task sends the release again, paced and jittered,
// until the server answers (for up to the lease, past which the grant
// would have expired anyway; Client.Close gives it up), and until it
// lands the lock may show held. An Unlock whose ctx ends first is seen
// through the same way. While ctx is
// alive, nothing else bounds the wait: a stalled server delays Lock but
// never surfaces as context.DeadlineExceeded, and a transient transport
// error (a dropped connection, a server restarting) is retried after a
// jittered backoff. A grant whose reply came after its lease (less the
// drift margin) had run out by the local clock is given back, and Lock
// waits on: Lock never returns a hold it may no longer have.
//
// The layout is Redisson's: a Redisson RLock on the same name and a Mutex
// exclude each other and wake each other's waiters.
package rlock
