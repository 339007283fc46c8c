package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/redistest"
)

// rueidis sleeps out its reconnect backoff in a goroutine of its own after
// a failed dial (the unreachable-server test); it is not ours to await.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

func TestDemoRunsOnEmbeddedRedis(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"demo", "--duration", "500ms", "--workers", "4", "--locks", "2"}, &out, &errOut)
	assert.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "embedded miniredis")
	assert.Contains(t, out.String(), "OK: no overlapping holders")
}

func TestDemoRunsOnRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	var out, errOut bytes.Buffer
	code := run([]string{"demo", "--redis", "redis://" + srv.Addr(), "--duration", "500ms"}, &out, &errOut)
	assert.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "redis://"+srv.Addr())
	assert.Contains(t, out.String(), "OK: no overlapping holders")
}

func TestDemoReportsBadURLAndUnreachableServerInOneLine(t *testing.T) {
	for _, url := range []string{"http://x:y", "redis://127.0.0.1:1"} {
		var out, errOut bytes.Buffer
		code := run([]string{"demo", "--redis", url, "--duration", "100ms"}, &out, &errOut)
		assert.Equal(t, 1, code)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut.String()), "\n")+1, errOut.String())
		assert.Contains(t, errOut.String(), "redisync demo:")
	}
}

func TestUnknownCommandPrintsUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"nope"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "usage: redisync")
}
