package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/redisync/redisync/internal/redistest"
)

// binary is the redisync command built once for the tests that run it as
// users do (binary_test.go).
var binary string

// TestMain builds the binary, runs the tests, and checks for leaks. rueidis
// sleeps out its reconnect backoff in a goroutine of its own after a failed
// dial (the unreachable-server test); it is not ours to await.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redisync-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "redisync")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build redisync: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
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
