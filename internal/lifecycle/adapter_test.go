//go:build !lifecycle_ae978fd

package lifecycle

import (
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// The options that make a handle reentrant (see adapter_ae978fd_test.go for
// the starting commit of issue 12, which had none).

func reentrantRlock() []rlock.Option       { return []rlock.Option{rlock.WithReentrant()} }
func reentrantFairlock() []fairlock.Option { return []fairlock.Option{fairlock.WithReentrant()} }
func reentrantRWLock() []rwlock.Option     { return []rwlock.Option{rwlock.WithReentrant()} }
