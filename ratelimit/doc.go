// Package ratelimit is a distributed rate limiter: GCRA (the generic cell
// rate algorithm) on the Redis server's clock, one script call per
// decision, one key per limited identity, shared by every process that
// makes a Limiter of the same name.
//
//	lim := ratelimit.New(c, "api", ratelimit.PerSecond(1000), 100) // 1,000/s per key, bursts of 100
//	res, err := lim.Allow(ctx, "user:42")
//	if err != nil { ... }          // Redis could not be asked: the caller decides (fail open or closed)
//	if res.Allowed == 0 {
//		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(res.RetryAfter.Seconds()))))
//		...
//	}
//	err = lim.Wait(ctx, "batch:7", 10) // or block until 10 events are admitted
//
// # Semantics
//
// Each identity key gets the limiter's rate, Limit events per Period,
// spread evenly one emission interval T = Period/Limit apart (rounded up
// to a microsecond), and may spend up to burst events at once when it has
// been idle. Over any window of length W the events admitted for one key
// are at most burst + W/T: over 10 s at 1,000/s with a burst of 100, at
// most 10,100, however many processes and goroutines ask.
//
//   - AllowN admits n events now or none; AllowAtMost admits as many of n
//     as it can. A denial writes nothing and says when to retry
//     (Result.RetryAfter).
//   - Wait reserves n events and sleeps until their admission: see Wait
//     for the order of waiters and what a cancelled Wait gives back.
//   - Reset forgets a key's history.
//
// The clock is the server's TIME, never a client's: processes on machines
// whose clocks disagree share one schedule. A step of the server's clock
// admits at most a burst beyond the rate: forward, an identity finds its
// schedule in the past and gets at most its burst at once (GCRA never
// banks more); back, it finds its schedule further ahead and is admitted
// less until the clock catches up. A failover to a replica keeps every
// schedule the replica received (the keys travel with their absolute
// expiry); the replica's clock against the master's counts as one such
// step, and writes the replica had not received are decisions it does not
// know of (as for every primitive: redisync.WithWaitReplicas makes each
// admission wait for replicas).
//
// # Errors
//
// Bad input is refused before any I/O: a rate, burst, n or key that cannot
// be used is an *ArgError (ErrInvalidRate, ErrInvalidBurst, ErrInvalidN,
// ErrInvalidKey); an unusable limiter name is redisync.ErrInvalidName. New
// keeps its own refusals for every method to return, so a limiter built
// from configuration reports them where the calls are. A Redis key of the
// limiter's that holds something else (a user's data) is a
// *redisync.WrongKindError (redisync.ErrWrongKind), never overwritten or
// deleted. After Client.Close every method returns redisync.ErrClosed. A
// method whose ctx ends returns ctx.Err() unwrapped; Redis and transport
// errors name the limiter, the operation and the key.
//
// # How it works
//
// For limiter N and identity key K:
//
//  1. The state is one string key, "redisync_rate:{H}:<len(N)>:N:K"
//     (H: K's hash tag if it has one, else K itself, else "" when K holds
//     a '}' but no tag), holding "<tat>:<gen>": the theoretical arrival
//     time (TAT) of the schedule in server microseconds, and the key's
//     generation (the server time it was created). The key expires at the
//     TAT (SET ... PX): an identity idle long enough to have its full
//     burst back has no key. Each decision names only this key, so every
//     limiter works on a Redis Cluster, and one identity's keys of all
//     limiters share K's slot.
//  2. Allow, AllowN, AllowAtMost and Wait's reservation run
//     rate_decide.lua: GET of the key (and PTTL when it exists: a string
//     without expiry is no state of ours), TIME, and when it admits, SET
//     of the new TAT with its expiry — 4 calls in one script (3 for a
//     denial, and for a key's first decision). With tat = max(TAT, now),
//     n events are admissible when tat + n×T - burst×T <= now; admitting
//     them sets the TAT to tat + n×T. A reservation sets it whatever the
//     delay, which is tat + n×T - burst×T - now.
//  3. A cancelled Wait runs rate_give_back.lua (GET, PTTL, TIME, SET):
//     the TAT goes down by min(n×T, burst×T - (TAT - end)), end being the
//     TAT its reservation set, when the generation is the same and its
//     admission time is still ahead.
//  4. Reset runs rate_reset.lua: GET, PTTL, DEL.
//
// The decision script is flagged as a write (#!lua): out of memory Redis
// refuses it whole. Its one write is its last command, so a denied SET
// (ACL) leaves nothing written and is reported as NOPERM naming it.
package ratelimit
