package rlock

import (
	"context"
	"runtime"
	"testing"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/scripts"
)

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

func keysFor(name string) *scripts.LockKeys {
	ch, _ := keys.Derived(keys.LockChannelPrefix, name)
	tk, _ := keys.Derived(keys.LockTokenPrefix, name)
	return &scripts.LockKeys{Lock: name, Channel: ch, Token: tk}
}

func rawPair(b *testing.B, ctx context.Context, rc rueidis.Client, k *scripts.LockKeys, owner string) {
	a, err := scripts.LockAcquire(ctx, rc, k, "30000", owner, false)
	if err != nil || !a.OK {
		b.Fatal("acquire", err)
	}
	if _, err := scripts.LockRelease(ctx, rc, k, owner, "30000", 1, "publish"); err != nil {
		b.Fatal("release", err)
	}
}
