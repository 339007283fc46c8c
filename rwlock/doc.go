// Package rwlock is a distributed read-write lock: many readers
// or one writer, with per-hold leases, renewal, a lost-lease signal and
// fencing tokens, in Redisson's RReadWriteLock layout so Go and Java
// services can share it.
//
//	rw := rwlock.New(c, "catalog")
//	if err := rw.RLock(ctx); err != nil { ... }    // shared
//	defer rw.RUnlock(context.WithoutCancel(ctx))
//
//	if err := rw.Lock(ctx); err != nil { ... }     // exclusive
//	defer rw.Unlock(context.WithoutCancel(ctx))
//
// An RWMutex value is one owner with two sides. Each side has its own hold
// count, lease, Done and Err; ReadLocker and WriteLocker return the sides as
// redisync.Locker values for multilock and redisync.Do. Leases (watchdog or
// WithLease), renewal, loss, cancellation and errors follow the rlock
// package.
//
// # Ownership: a handle is a sync.RWMutex
//
// Goroutines may share one RWMutex as they would a sync.RWMutex. Its
// readers read together: each RLock is one more read hold of the handle's
// owner in Redis (the read side's count), its RUnlock one less, and the
// read side's Token, Done and Err are those of the handle's read holds
// together (Done closes when the last one ends). Its Lock excludes its own
// readers and writers as well as everyone else's: a Lock while the handle
// reads or writes waits for those holds to be released, an RLock while it
// writes waits for the Unlock, and a waiting Lock holds back the handle's
// later RLocks, so its readers cannot starve its writer. As with
// sync.RWMutex, a goroutine must not RLock again while it reads (a writer
// of the same handle may be waiting in between), nor Lock while it reads or
// RLock while it writes: those wait until ctx ends. All waits are bounded by
// ctx; Unlock and RUnlock may come from any goroutine; a lost hold stays the
// handle's until its Unlock or RUnlock.
//
// WithReentrant asks for Redisson's RReadWriteLock semantics instead (and
// WithOwner implies them): every Lock or RLock of the handle nests into its
// side's hold at once, the write holder may take read holds (releasing the
// last write hold then downgrades the lock), and a Lock by a handle that
// only reads returns ErrUpgrade at once; goroutines sharing such a handle do
// not exclude each other; a Lock or RLock past a lost hold of its side,
// before that hold's Unlock, nests past it (the lost hold's Unlock comes
// after the new hold's and reports redisync.ErrLockLost). WithNonReentrant
// turns each of the waits for the handle's own holds into
// redisync.ErrNonReentrant at once (one read hold per handle). See rlock's
// "Ownership" section for the reasoning.
//
// # Rules
//
//   - Readers share the lock while no other owner writes. The writer
//     excludes every other reader and writer.
//   - Write-to-read (reentrant handles): the write holder may take read
//     holds; releasing its last write hold then downgrades the lock to a
//     read lock, and every waiter is woken at once (Redisson does not
//     publish there, so its waiting readers sit out their poll).
//   - Read-to-write (reentrant handles): Lock by an owner that holds read
//     holds but not the write hold returns ErrUpgrade at once. It would wait
//     for its own read holds forever (Redisson's documented self-deadlock).
//   - Fairness: by default readers are admitted whenever no writer holds the
//     lock, as in Redisson: best read throughput, but a steady stream of
//     overlapping readers can starve a writer indefinitely. With
//     WithWriterPreference, a waiting writer registers a claim (heartbeated
//     like a fair-lock waiter, dropped after WithWaiterTimeout without one);
//     while any claim is live, new readers wait and readers that already hold
//     a read hold may still re-enter. The readers drain and the writer gets
//     in. (Several waiting writers then compete among themselves.)
//   - Each read hold has its own lease key. Renewal extends only the
//     renewing owner's keys, so a reader whose process died loses its share
//     when its lease runs out, however long other readers keep reading (a
//     Redisson client before 2026 renewed every reader's keys). Its count
//     stays in the hash but no longer keeps the lock: the last live reader's
//     release deletes the hash.
//
// # Fencing tokens
//
// A write hold's Token is a fresh token, strictly greater than every token
// issued before for the name (as rlock's). A read hold's Token is the token
// of the read phase it joined: issued when the lock went from free to
// read-locked, or, for reads taken under one's own write hold (and the read
// phase a downgrade leaves), that write's token. Readers of one phase share
// it. It is greater than every write token issued before the phase and
// smaller than every write token issued after it, so a resource that records
// the highest token it has seen can refuse a reader whose phase was
// overtaken by a later write (a stale read).
//
// # How it works
//
// For a lock named N and owner O ({N} is N itself when N contains '{', or N
// in braces otherwise, as Redisson names it; H is N's hash tag, or N itself
// when it has none: our own keys carry the whole name after the tag, so no
// two names share a key; every key shares N's hash slot, and names whose
// Redisson names would not are refused on a Cluster):
//
//	N                                hash: "mode" = "read" | "write",
//	                                 "O" = O's read count, "O:write" = O's write count
//	                                 (exactly Redisson's fields), PTTL = the longest
//	                                 remaining hold
//	redisync_rwlock_token:{H}:N      the current phase's token: "<token> w O:write" or
//	                                 "<token> r", with the hash's PTTL (outside the hash:
//	                                 Redisson's scripts count its fields)
//	{N}:O:rwlock_timeout:<n>         string "1", one per read hold n of O, PX = that hold's
//	                                 lease (Redisson's name: "x" and "{x}" share the base,
//	                                 the owner id keeps them apart; WithOwner refuses ids
//	                                 that could make two locks' keys meet)
//	redisync_lock_token:{H}:N        the last token, kept briefly after a release
//	redisync_rwlock_writers:{H}:N    zset "O:write" -> claim deadline, server ms
//	                                 (writer preference only; expires by itself)
//	redisson_rwlock:{N}              channel for every waiter, readers and writers
//
// A hash is this lock only with "mode" = "read" or "write" and an expiry: a
// hash without "mode" is never free — an rlock's or fair lock's hash (with
// an expiry) is busy, and anything else (a user's hash, a key of another
// type, a semaphore, a Redlock) makes Lock, RLock and their Try forms
// return redisync.ErrWrongKind; ForceUnlock deletes only this layout. A
// reader joining others' read phase first checks that every field is a
// lock's. Nothing is written before every key has been checked and every
// write command cleared with the ACL (an error names a denied one).
//
// Read acquire (rwlock_read_acquire.lua): if mode is absent, or "read" with
// no live writer claim (or O already reads), or "write" with O as the writer:
// HINCRBY O, SET the new hold's timeout key with PX lease, raise the hash's
// PTTL to at least the lease. A new read phase draws its token as rlock
// does (hybrid logical clock on TIME). Otherwise it replies with the PTTL.
//
// Read release (rwlock_read_release.lua): decrement O (the expected count
// makes a retry harmless, as in rlock), DEL the released hold's timeout key;
// then, unless O writes, find the longest PTTL among every reader's timeout
// keys: if positive, set the hash's PTTL to it; otherwise DEL the hash and
// PUBLISH "1" (SPUBLISH on a Cluster), which wakes every waiter.
//
// Write acquire (rwlock_write_acquire.lua): if mode is absent, HSET mode
// "write" and O:write 1, PEXPIRE lease, SET the phase key to a fresh token,
// and withdraw O's claim; if O already writes, HINCRBY (a write hold a
// Redisson client began gets its token now); if O reads only, reply UPGRADE;
// otherwise register or refresh the claim (writer preference) and reply
// with the PTTL. Write release (rwlock_write_release.lua): decrement
// O:write; at zero, DEL the hash, or set mode "read" if O still reads; then
// PUBLISH "1". A Lock that gives up withdraws its claim (rwlock_leave.lua)
// and wakes the readers it held back.
//
// The watchdog renews both sides in batches (rwlock_renew.lua, one script
// per hash slot): a write hold while O:write is there; a read hold while O's
// count and every one of O's timeout keys ("1" with an expiry) are there,
// extending exactly those keys, the hash and the phase key, never
// shortening an expiry (PEXPIRE GT); either is gone when the phase key
// names another token (a later hold of the same owner). A hold of count 1
// in its own kind of phase costs a look at the hash (HGET, a reader's
// HMGET with "mode"), one at the phase key (a reader's MGET with its
// timeout key) and a PEXPIRE per key.
//
// # Interoperating with Redisson
//
// Redisson's RReadWriteLock clients on the same name see the same hash,
// timeout keys and channel, and exclude redisync clients both ways (a test
// plays Redisson's scripts against this package). Differences to know:
// Redisson's readers ignore writer-preference claims; Redisson's read
// release publishes "0", which wakes one redisync waiter rather than all
// (others poll within the Client's MaxPoll); Redisson forms the "{N}" base
// by "contains '{'", and so does redisync for every name Redisson shares
// (docs/redisson.md); names like "a{b" are refused on a Cluster. Checked
// against Redisson itself by interop/ (docs/redisson.md).
package rwlock
