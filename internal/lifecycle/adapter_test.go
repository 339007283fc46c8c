package lifecycle

import (
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// The options that make a handle reentrant. (On the starting commit ae978fd
// every handle was reentrant and there was no option: there this adapter
// returned no option, so the same model could run on both trees.)

func reentrantRlock() []rlock.Option       { return []rlock.Option{rlock.WithReentrant()} }
func reentrantFairlock() []fairlock.Option { return []fairlock.Option{fairlock.WithReentrant()} }
func reentrantRWLock() []rwlock.Option     { return []rwlock.Option{rwlock.WithReentrant()} }
