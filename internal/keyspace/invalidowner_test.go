package keyspace

import "github.com/redisync/redisync"

// errInvalidOwner is the sentinel the tests expect for a refused owner id.
// (Kept in its own file so that the tests can be run against a tree that
// predates it, with this one line replaced.)
var errInvalidOwner = redisync.ErrInvalidOwner
