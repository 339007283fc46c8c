// Package mixedversion keeps the wire format honest (issue 15): its tests
// check that docs/layout.md names every key prefix, hash field, channel
// message and script the code uses (TestLayoutDocNamesEverything), and run
// the previous release and HEAD against one redis-server to show that a
// rolling deploy never grants one lock twice (TestMixedVersionsExclude).
//
// The mixed-version test builds the driver program (./driver) twice: from
// the newest tag v* of this repository, taken with git archive, and from
// HEAD's tree; both builds get HEAD's driver source, so they differ only in
// the library under it. It skips when the clone has no such tag; the
// environment variable REDISYNC_MIXED_BASE=<commit or tag> picks the base
// instead (to test the machinery on a commit: HEAD itself, or ae978fd,
// which predates layout 1).
//
// What must exclude depends on the two builds' layout versions (the number
// in docs/layout.md's title; a tree without that file is layout 0): see
// Expect.
package mixedversion
