package scripts

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
)

var (
	//go:embed latch_lib.lua
	latchLibSrc string
	//go:embed latch_try_set_count.lua
	latchTrySetCountSrc string
	//go:embed latch_count_down.lua
	latchCountDownSrc string
	//go:embed latch_count.lua
	latchCountSrc string
	//go:embed latch_delete.lua
	latchDeleteSrc string

	latchTrySetCount = newScript(latchLibSrc + "\n" + latchTrySetCountSrc)
	latchCountDown   = newScript(latchLibSrc + "\n" + latchCountDownSrc)
	latchCount       = newScript(latchLibSrc + "\n" + latchCountSrc)
	latchDelete      = newScript(latchLibSrc + "\n" + latchDeleteSrc)
)

// LatchKeys names a countdown latch's key and channel (Redisson's
// RCountDownLatch layout).
type LatchKeys struct {
	Latch   string // the string holding the count, named by the raw name
	Channel string // Redisson's latch channel
}

// LatchTrySetCount runs latch_try_set_count.lua: it reports whether the
// latch was created with count n (false: one exists). A write the replicas
// did not acknowledge still reports what it did on the master, with the
// error.
func LatchTrySetCount(ctx context.Context, c rueidis.Client, k *LatchKeys, n int64, publish string) (bool, error) {
	v, err := latchTrySetCount.Exec(ctx, c, []string{k.Latch, k.Channel}, []string{strconv.FormatInt(n, 10), publish}).AsInt64()
	var u *errs.UnconfirmedError
	if errors.As(err, &u) {
		v, _ = u.Reply.AsInt64()
	}
	return v == 1, err
}

// LatchCountDown runs latch_count_down.lua and returns the count afterwards.
func LatchCountDown(ctx context.Context, c rueidis.Client, k *LatchKeys, publish string) (int64, error) {
	return latchCountDown.Exec(ctx, c, []string{k.Latch, k.Channel}, []string{publish}).AsInt64()
}

// LatchCount runs latch_count.lua: the latch's count, 0 when there is none.
func LatchCount(ctx context.Context, c rueidis.Client, k *LatchKeys) (int64, error) {
	msg, err := latchCount.Exec(ctx, c, []string{k.Latch}, nil).ToMessage()
	if err != nil {
		return 0, err
	}
	s, err := msg.ToString()
	if err != nil {
		return 0, fmt.Errorf("scripts: unexpected latch count reply: %w", err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("scripts: unexpected latch count reply: %w", err)
	}
	return n, nil
}

// LatchDelete runs latch_delete.lua: it reports whether a latch was deleted.
func LatchDelete(ctx context.Context, c rueidis.Client, k *LatchKeys, publish string) (bool, error) {
	v, err := latchDelete.Exec(ctx, c, []string{k.Latch, k.Channel}, []string{publish}).AsInt64()
	return v == 1, err
}
