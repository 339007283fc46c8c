package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

// ExhaustMemory fills the server behind c (DEBUG POPULATE, about 5 MB, and
// a key with a TTL) and sets maxmemory 1 MB below what it then uses, with
// noeviction: every write that may grow memory, and every command queued
// in a MULTI, is refused with OOM; plain reads and scripts flagged
// no-writes still run. It fails t when the server still takes a SET.
func ExhaustMemory(t testing.TB, c rueidis.Client) {
	t.Helper()
	Do(t, c, "DEBUG", "POPULATE", "50", "oom:fill", "100000")
	Do(t, c, "SET", "oom:ttl", "v", "PX", "600000")
	info, err := Do(t, c, "INFO", "memory").ToString()
	if err != nil {
		t.Fatalf("redistest: INFO memory: %v", err)
	}
	used := int64(0)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if used <= 0 {
		t.Fatalf("redistest: no used_memory in INFO memory:\n%s", info)
	}
	Do(t, c, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	Do(t, c, "CONFIG", "SET", "maxmemory", strconv.FormatInt(used-1<<20, 10))
	if c.Do(context.Background(), c.B().Set().Key("oom:probe").Value("v").Build()).Error() == nil {
		t.Fatal("redistest: ExhaustMemory: the server still takes a SET")
	}
}
