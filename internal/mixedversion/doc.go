// Package mixedversion keeps the wire format honest (issue 15): its tests
// check that docs/layout.md names every key prefix, hash field, channel
// message and script the code uses (TestLayoutDocNamesEverything), and run
// the previous release and HEAD against one redis-server to show that a
// rolling deploy never grants one lock twice (TestMixedVersionsExclude).
//
// The mixed-version test builds the driver program (./driver) twice: from
// the newest tag v* of this repository (without one, as in CI's clone:
// 341aa26, the commit the CHANGELOG calls v0.1.0), taken with git archive,
// and from HEAD's tree; both builds get HEAD's driver source, so they differ
// only in the library under it. The environment variable
// REDISYNC_MIXED_BASE=<commit or tag> picks the base instead (to test the
// machinery on a commit: HEAD itself, or ae978fd, which predates layout 1).
// A clone with no base (a shallow one) skips the test, or fails it when CI
// is set (.ci/run sets it). About 8 s with a warm build cache, 30 s cold.
//
// What must exclude depends on the two builds' layout versions (the number
// in docs/layout.md's title; a tree without that file is layout 0): see
// Expect.
package mixedversion
