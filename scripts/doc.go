// Package scripts describes redisync's Lua scripts. The scripts themselves —
// one .lua file each, embedded, with one typed Go wrapper per script — live in
// internal/scripts and export nothing here: the primitives call them, and
// their key and argument lists are not an API (docs/layout.md is the contract
// for what they store).
//
// Each .lua file starts with a header naming its KEYS, ARGV and reply. A
// script's first run goes as EVAL together with a SCRIPT LOAD of its text,
// and the digest Redis answers serves every later EVALSHA (the client
// computes no SHA-1: redisync runs in FIPS 140-only mode). A node that
// answers NOSCRIPT (after SCRIPT FLUSH, a restart or a failover) is sent
// EVAL, so a flushed script cache costs one extra round trip and is never
// read as a result; a user refused SCRIPT LOAD runs every script by EVAL.
// No script here is marked retryable: acquire and release are not
// idempotent on their own, and the callers make them safe to repeat.
//
// Each script carries only the helpers of lib.lua and keyspace.lua it calls
// (Redis runs a script's top level on every call, so an unused helper would
// cost a closure per call). Its common path — a free name, the only hold —
// comes first and makes as few Redis calls as the guarantees allow
// (docs/benchmarks.md, "Call budget"); anything else falls through, before
// any write, to the rare paths, which check everything again.
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
