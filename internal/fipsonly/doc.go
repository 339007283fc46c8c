// Package fipsonly holds the test that every primitive runs in FIPS 140-only
// mode (GODEBUG=fips140=only, set for its test binary by a //go:debug line),
// where crypto/sha1 panics: redisync computes no SHA-1 — the scripts'
// digests come from the server's SCRIPT LOAD — and builds nothing at init.
// CI runs the lock packages' own tests in that mode too (.ci/run).
package fipsonly
