// Package interop holds redisync's interoperability suite: Go tests that run
// redisync against Redisson itself (the Java client, interop/java) and
// node-redisson (an independent Redisson-compatible Node.js client,
// interop/node) on one real redis-server, so the Redisson-compatible layouts
// are checked against the clients they claim to be compatible with, not
// against our reading of them.
//
// The tests are behind the build tag "interop" (they need Java 17, Maven and
// Node.js) and run with `make interop`, which builds both drivers and then
// runs `go test -tags interop ./interop/`. Each driver is a long-lived
// process speaking a line protocol on stdin/stdout (see
// java/src/main/java/io/redisync/interop/Driver.java): the Go test asks it to
// lock, try, unlock, force-unlock or query a lock under an explicit owner
// ("thread id"), and reads the answers as they complete, so one test can hold
// a Java lock while a Go waiter waits, and the reverse.
//
// What the suite checks, per primitive, is listed in docs/redisson.md.
package interop
