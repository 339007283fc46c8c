// Package rlock is a reentrant distributed lock (Redisson's RLock) with
// lease renewal, a lost-lease signal and fencing tokens.
//
//	mu := rlock.New(c, "orders:42")              // one owner; no I/O
//	err := redisync.Do(ctx, mu, func(ctx context.Context) error {
//		return store.Write(ctx, order, mu.Token()) // ctx ends if the lock is lost
//	})
//
// # Ownership and lease
//
// A Mutex value is one owner, "<client uuid>:<n>" (WithOwner sets it, so
// another process can resume or release a hold). Lock on a handle that holds
// the lock nests; each Lock needs its own Unlock. By default a hold's lease
// is the Client's watchdog timeout (30 s), renewed every third of it until
// the last Unlock; WithLease gives each hold a fixed lease without renewal.
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
// For a lock named N ({N} is N's hash tag, or N in braces when it has none):
//
//	N                             hash: "<owner>" = hold count, "redisync:token" = fencing
//	                              token of the current hold; PTTL = the lease
//	redisson_lock__channel:{N}    wake-up channel (Redisson's)
//	redisync_lock_token:{N}       the last token, kept 1 s after a release only
//	                              when the server clock has not yet passed it
//
// Acquire (rlock_acquire.lua): if N is absent, HSET owner 1 and a new token,
// PEXPIRE lease; if the owner's field exists, HINCRBY (the lease is never
// shortened, the token kept); otherwise reply with N's PTTL. A waiting Lock
// joins the Client's subscription to the channel (SUBSCRIBE, or SSUBSCRIBE
// on a Cluster), waits for its confirmation, tries again, then waits for a
// message or min(PTTL, MaxPoll, ctx) before each further attempt.
//
// Release (rlock_release.lua) carries the hold count the handle expects, so
// a retried Unlock never decrements twice. The last release DELs N and
// PUBLISHes "0" (SPUBLISH on a Cluster), which wakes one waiter. The
// watchdog renews many holds with one rlock_renew.lua call per hash slot,
// each checking owner and token, in one pipelined round trip.
//
// The fencing token is max(last + 1, server TIME in µs), computed in the
// acquire script: tokens of a name strictly increase across releases,
// expiry, restarts without persistence and script flushes, as long as the
// server clock does not step back by more than the gap between two grants.
//
// A cancelled Lock returns ctx.Err() unwrapped, at its deadline. An acquire
// already sent is never abandoned: its reply says whether it was granted,
// and a grant nobody wants is given back with an owner-checked release — by
// the caller when the reply is in, or by a Client task when ctx ends first
// (Client.Close waits for those tasks). Nothing is left behind.
//
// The layout is Redisson's: a Redisson RLock on the same name and a Mutex
// exclude each other and wake each other's waiters.
package rlock
