// Package redlock is the Redlock algorithm over N independent Redis
// masters, as published, with the parts that published versions leave out:
// a validity check, release on every node, fencing tokens that are
// monotonic across different majorities, lease renewal with a loss signal,
// and a restarted node kept out of quorums.
//
//	mu := redlock.New([]*redisync.Client{c1, c2, c3, c4, c5}, "payments:batch")
//	if err := mu.Lock(ctx); err != nil { ... }  // *QuorumError when nodes fail
//	defer mu.Unlock(context.WithoutCancel(ctx))
//
// # Ownership: a handle is a sync.Mutex
//
// A Mutex is used like a sync.Mutex: goroutines may share one handle, and
// its Lock and Unlock exclude them from each other as well as from every
// other handle and process. A Lock on a handle that is already held — by
// another goroutine, or by the same code path — waits for that hold's
// Unlock (bounded by ctx) before it asks any node; TryLock then reports
// false without I/O. Unlock may come from any goroutine. A lost hold stays
// the handle's until its Unlock, which reports redisync.ErrLockLost.
// WithReentrant asks for re-entry instead: every Lock on the handle nests,
// without I/O, keeps the hold's token and needs its own Unlock (the nodes
// keep no count; the last Unlock releases). The handle is one owner,
// "<first client's uuid>:<n>", and each of its rounds writes its own key
// value, "<owner>:<round>": the hold's renewals and release use the value of
// the round that won it, and the undo of a round that did not win uses that
// round's. So a reply that comes late — an acquire or a release — can only
// act on its own round's key, and never holds up the handle's next round.
//
// The hold itself — its count, token, Done and Err, its watchdog
// registration, loss, and the queue of releases that Unlock leaves to
// finish — is the lifecycle every redisync lock shares;
// this package supplies its acquire (the quorum round below) and its
// release (on every node).
//
// Read this first: a Redlock is not a correctness guarantee. It assumes
// bounded network delay, bounded process pauses and bounded clock drift; a
// holder that pauses past its validity, or a node whose clock jumps, can
// break mutual exclusion (Kleppmann 2016). Use the fencing token at the
// resource. If one Redis server (with Sentinel) is enough for your
// availability needs, rlock with fencing is simpler and faster.
//
// # The algorithm
//
// One attempt, with the monotonic clock started before the first send:
//
//  1. Phase 1 on every node in parallel: redlock_acquire.lua does SET name
//     value NX PX lease and replies with the node's clock reading
//     max(counter, TIME in µs) and its run_id. The attempt waits for the
//     replies up to the node timeout (WithNodeTimeout: a twentieth of the
//     lease, at least 100 ms but at most a quarter of the lease, and at
//     most 250 ms) or until ctx ends; a reply already in when it stops
//     waiting counts. An acquire is never abandoned in flight — given up
//     on, it could still run after the undo and leave a key no one renews
//     or releases — so a node that answers late (or after ctx ended) has
//     its reply awaited by a task of the first Client (Close waits for it),
//     which then releases that round's grant there (a late node is never
//     part of a hold: the hold is fenced where replies came in time). That
//     release is sent again, paced and jittered, until the node answers,
//     for up to the lease; where the acquire itself failed (timed out on a
//     connection then dropped, whose bytes a paused node reads when it
//     resumes) one more release follows the first answer, so an acquire
//     that lands after the release is released too. A
//     Lock whose ctx ends returns ctx.Err() at once, and the next attempt
//     does not wait for such tasks. A node that already owes a reply for
//     longer than the node timeout (paused, or cut off by a partition) is
//     still asked but not waited for, in rounds and releases alike, until it
//     answers again: a round against a split view then holds its keys for a
//     round trip, not a node timeout.
//  2. Success needs a quorum (N/2+1) of grants from nodes not in restart
//     quarantine, and a positive validity = lease − elapsed − drift (drift
//     = 1% of the lease + 2 ms). A client paused between the sends and
//     reading the replies finds its validity spent and fails.
//  3. Phase 2 (fencing): the token is one above the highest reading among
//     the granting nodes; redlock_fence.lua raises each granting node's
//     counter to it while the node still holds the round's key. It must
//     succeed on a quorum within the validity.
//  4. On any failure the lock is released on every node that granted or
//     whose answer is unknown (an error may hide a grant), and on late
//     nodes once they answer; Lock retries after a random delay
//     (WithRetryDelay, 20–120 ms) — unless so many nodes answered with an
//     error no retry changes (a key of another kind, NOPERM, OOM) that no
//     quorum is possible: Lock then returns the *QuorumError at once. A grant whose validity has run out by
//     the time it would be reported is treated the same way: Lock never
//     returns nil for a hold it can no longer rely on. Lock does not use
//     pub/sub: it polls.
//
// Unlock ends the hold locally at once (renewal stops, Done closes) and
// sends the owner-checked release (redlock_release.lua) to every node
// whatever ctx says; ctx, and the release wait (the node timeout, at least
// 100 ms), bound only how long it waits for the replies. A task of the
// first Client awaits the rest; the handle's next Lock goes out at once,
// since a late release names the key value of the hold it ends and cannot
// meet the next hold's. A release that no node confirmed stays queued and
// is sent again before the handle's next round (a release that lands twice
// deletes nothing but that hold's key).
//
// The watchdog of the first Client renews a hold on every node every third
// of the lease (owner-checked PEXPIRE, never re-creating a key). The hold is
// lost — Done closes, Err matches redisync.ErrLockLost — as soon as so many
// nodes report it gone that a quorum cannot confirm it, or when no quorum
// confirms it before the validity would run out.
//
// # Fencing tokens across majorities
//
// Taking the maximum of independent per-node counters is not monotonic: a
// later holder whose majority never saw the earlier token can get a smaller
// one. Phase 2 fixes it: any two successful grants' fencing quorums and
// phase-1 quorums intersect in some node k, where the earlier grant's
// phase-2 write happened while it held k's key, and the later grant's
// phase-1 read after that key was gone; so the later reading on k, and its
// token, exceed the earlier token. The counters live in
// redisync_redlock_token:{H}:name on each node (H: name's hash tag, or the
// name itself) for a day after the last
// grant; the server clock (in the reading) covers a counter that was lost,
// provided the nodes' clocks differ by less than the time between grants.
// A rapid state-machine model (model_test.go: interleaved attempts, client
// pauses, expiry, lost replies, amnesic restarts) checks both mutual
// exclusion and token monotonicity, and finds regressions when phase 2 is
// removed.
//
// # Restarted nodes
//
// A node that restarts without persistence forgets its keys and could lend
// its vote to a second holder while the first still relies on it. Each
// Client remembers its server's run_id (from phase 1's reply); when it
// changes, that node sits out quorums for the restart quarantine
// (WithRestartQuarantine; default: the longest of the lease and the
// clients' watchdog timeouts), after which every lease granted before the
// restart has ended — the "delayed restart" of the Redlock article,
// enforced by the client. It needs the Client to have seen the node before
// the restart; a process that first meets a node after it restarted cannot
// tell, so run Redis with persistence (appendfsync always) or restart nodes
// only after the longest lease.
//
// # Errors
//
// Busy (the lock is held elsewhere) is (false, nil) from TryLock, and
// ctx.Err() from Lock when ctx ends. When nodes fail, restart quarantine or
// a spent validity prevents a quorum, TryLock returns a *QuorumError
// (granted, required, each node's error, with Unwrap() []error so that
// errors.Is sees ErrNodeRestarted, network errors, and the context error),
// and so does Lock if its ctx ends after such an attempt. A node that did
// not answer within the node timeout is ErrNodeTimeout — never
// context.DeadlineExceeded, which means only that the caller's ctx ended.
// Unlock returns a *QuorumError with Op OpRelease ("release confirmed by 0
// of N nodes") when no node confirmed the release.
package redlock
