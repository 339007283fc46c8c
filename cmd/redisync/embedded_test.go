package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/redistest"
)

// With -tags redisync_noembed the binary leaves out the demo's embedded
// server (miniredis and its Lua interpreter): it is smaller, and its demo
// asks for a server in one line instead of starting one.
func TestNoEmbedBuildLeavesTheEmbeddedServerOut(t *testing.T) {
	deps, err := exec.Command("go", "list", "-deps", "-tags", "redisync_noembed", ".").Output()
	require.NoError(t, err)
	pkgs := strings.Fields(string(deps))
	require.True(t, slices.Contains(pkgs, "github.com/redis/rueidis"), "go list printed no dependencies")
	for _, p := range pkgs {
		assert.False(t, strings.HasPrefix(p, "github.com/alicebob/miniredis") || strings.HasPrefix(p, "github.com/yuin/gopher-lua"),
			"a redisync_noembed build links %s", p)
	}

	small := filepath.Join(t.TempDir(), "redisync")
	out, err := exec.Command("go", "build", "-tags", "redisync_noembed", "-o", small, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	full, err := os.Stat(binary)
	require.NoError(t, err)
	st, err := os.Stat(small)
	require.NoError(t, err)
	assert.Less(t, st.Size(), full.Size()*9/10, "leaving the embedded server out saves under a tenth of %d bytes", full.Size())

	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "REDIS_URL=") })
	demo := func(args ...string) (int, string, string) {
		cmd := exec.Command(small, append([]string{"demo", "--duration", "300ms"}, args...)...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, stdout.String(), stderr.String()
	}
	code, _, stderr := demo()
	assert.Equal(t, exitError, code)
	assert.Equal(t, "redisync demo: no --redis or $REDIS_URL given, and this build has no embedded Redis (built with -tags redisync_noembed)\n", stderr)

	srv := redistest.Start(t)
	code, stdout, stderr := demo("--redis", "redis://"+srv.Addr())
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "OK: no overlapping holders")
}
