package scripts

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/rueidis"
)

//go:embed lock_read.lua
var lockReadSrc string

var lockRead = newScript(lockReadSrc)

// LockRead runs lock_read.lua: the type, PTTL and fields (a hash's, else
// none) of the key name, read atomically, also under out of memory. The
// caller sends it without a replica WAIT (engine.WithoutWait): it writes
// nothing.
func LockRead(ctx context.Context, c rueidis.Client, name string) (typ string, pttl int64, fields map[string]string, err error) {
	vals, err := lockRead.Exec(ctx, c, []string{name}, nil).ToArray()
	if err != nil {
		return "", 0, nil, err
	}
	if len(vals) != 3 {
		return "", 0, nil, fmt.Errorf("redisync: unexpected reply of %d values reading %q", len(vals), name)
	}
	if typ, err = vals[0].ToString(); err != nil {
		return "", 0, nil, err
	}
	if pttl, err = vals[1].AsInt64(); err != nil {
		return "", 0, nil, err
	}
	fields, err = vals[2].AsStrMap()
	return typ, pttl, fields, err
}
