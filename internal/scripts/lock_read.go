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

// KeyRead runs lock_read.lua: the type and PTTL of key and, when its type
// is want ("hash", "string", "zset" or "list"), its content (a hash's flat
// field-value pairs, a string's value as the one element, a zset's members
// or a list's elements, in order), read atomically, also under out of
// memory. It writes nothing, and goes as EVALSHA_RO (a read-only ACL may run
// it; no replica WAIT follows it).
func KeyRead(ctx context.Context, c rueidis.Client, key, want string) (typ string, pttl int64, content []string, err error) {
	vals, err := lockRead.Exec(ctx, c, []string{key}, []string{want}).ToArray()
	if err != nil {
		return "", 0, nil, err
	}
	if len(vals) != 3 {
		return "", 0, nil, fmt.Errorf("redisync: unexpected reply of %d values reading %q", len(vals), key)
	}
	if typ, err = vals[0].ToString(); err != nil {
		return "", 0, nil, err
	}
	if pttl, err = vals[1].AsInt64(); err != nil {
		return "", 0, nil, err
	}
	content, err = vals[2].AsStrSlice()
	return typ, pttl, content, err
}

// LockRead is KeyRead of a hash: the type, PTTL and fields (a hash's, else
// none) of the key name.
func LockRead(ctx context.Context, c rueidis.Client, name string) (typ string, pttl int64, fields map[string]string, err error) {
	typ, pttl, content, err := KeyRead(ctx, c, name, "hash")
	if err != nil {
		return "", 0, nil, err
	}
	if len(content)%2 != 0 {
		return "", 0, nil, fmt.Errorf("redisync: unexpected reply of %d hash values reading %q", len(content), name)
	}
	fields = make(map[string]string, len(content)/2)
	for i := 0; i < len(content); i += 2 {
		fields[content[i]] = content[i+1]
	}
	return typ, pttl, fields, nil
}
