package keyspace

import "github.com/redisync/redisync"

// errWrongKind is the sentinel the tests expect for a key of another shape.
// (Kept in its own file so that the tests can be run against a tree that
// predates it, with this one line replaced.)
var errWrongKind = redisync.ErrWrongKind
