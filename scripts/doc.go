// Package scripts describes redisync's Lua scripts. The scripts themselves —
// one .lua file each, embedded, with one typed Go wrapper per script — live in
// internal/scripts and export nothing here: the primitives call them, and
// their key and argument lists are not an API (docs/layout.md is the contract
// for what they store). Before v0.1.0 the wrappers were exported by accident;
// the CHANGELOG lists them.
//
// Each .lua file starts with a header naming its KEYS, ARGV and reply. Scripts
// run through rueidis's Lua type: EVALSHA with the SHA-1 computed locally, and
// EVAL when the server answers NOSCRIPT (after SCRIPT FLUSH or a restart), so a
// flushed script cache costs one extra round trip and is never read as a
// result. No script here is marked retryable: acquire and release are not
// idempotent on their own, and the callers make them safe to repeat.
//
// Rules every script follows:
//   - it reads and checks before its first write (keyspace.lua): every key it
//     may write must hold its own layout — a lock hash, a semaphore's
//     configuration, a zset, hash or string of ours with an expiry — or it
//     answers "WRONGKIND <i> <found>" (a *redisync.WrongKindError naming
//     KEYS[i]) or, where another kind's lock holds the name, busy; and on
//     Redis 7 every write it may make is cleared with redis.acl_check_cmd,
//     so a denied command is an error naming it, with nothing written;
//   - out of memory never leaves a script half-done (Redis does not roll a
//     script back): a script that may grow memory (an acquire) starts with
//     Redis 7's "#!lua" shebang, so Redis refuses it whole before its first
//     command, and a read-only one with "#!lua flags=no-writes"; releases and
//     renewals carry no shebang, so that they run under OOM (Redis then
//     refuses only a first write that may grow memory, and their writes that
//     do not grow it come after a rewrite of the key's own expiry);
//   - time comes from the server (TIME), never from a client clock;
//   - every key and channel a script touches is passed in KEYS, so the script
//     is legal on a Redis Cluster; the channel is published with PUBLISH on a
//     single server and SPUBLISH on a Cluster.
package scripts
