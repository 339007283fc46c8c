package linearize

import (
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// kind makes handles of one exclusive lock kind: owner "" draws a fresh
// owner id, lease 0 is watchdog mode.
type kind struct {
	name string
	new  func(c *redisync.Client, name, owner string, lease time.Duration) redisync.Locker
}

var kinds = []kind{
	{"rlock", func(c *redisync.Client, name, owner string, lease time.Duration) redisync.Locker {
		var opts []rlock.Option
		if owner != "" {
			opts = append(opts, rlock.WithOwner(owner))
		}
		if lease > 0 {
			opts = append(opts, rlock.WithLease(lease))
		}
		return rlock.New(c, name, opts...)
	}},
	{"fairlock", func(c *redisync.Client, name, owner string, lease time.Duration) redisync.Locker {
		var opts []fairlock.Option
		if owner != "" {
			opts = append(opts, fairlock.WithOwner(owner))
		}
		if lease > 0 {
			opts = append(opts, fairlock.WithLease(lease))
		}
		return fairlock.New(c, name, opts...)
	}},
	{"rwlock", func(c *redisync.Client, name, owner string, lease time.Duration) redisync.Locker {
		var opts []rwlock.Option
		if owner != "" {
			opts = append(opts, rwlock.WithOwner(owner))
		}
		if lease > 0 {
			opts = append(opts, rwlock.WithLease(lease))
		}
		return rwlock.New(c, name, opts...).WriteLocker()
	}},
}
