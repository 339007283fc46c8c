// Package outside holds the tests that use redisync the way someone outside
// the repository does: a throw-away module that requires the published
// modules (github.com/redisync/redisync and its redisyncotel module) through
// a module proxy, with no replace and no workspace. They catch what the
// repository's own build cannot see: a replace that users do not get, a
// required version that does not exist, a file a module needs that is not in
// git, an Example that leans on a test-only helper.
//
// The proxy is a directory (GOPROXY=file://...) the test writes itself, with
// each module's files as git tracks them (working-tree contents) at version
// v0.1.0; third-party modules come from the machine's module cache, so no
// network is needed. The tests are skipped with -short.
package outside
