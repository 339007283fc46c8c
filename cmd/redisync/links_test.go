package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linkedModules are the only modules outside the standard library and
// redisync that the redisync binary may link: the client, its UUIDs, the
// syscalls run needs, and the demo's embedded server (miniredis and its Lua
// interpreter). Anything else makes the binary users install for cron larger
// and the README's first command (go run ./cmd/redisync demo) slower on a
// cold cache; a new entry here is a decision, not an accident.
var linkedModules = []string{
	"github.com/redis/rueidis",
	"github.com/google/uuid",
	"golang.org/x/sys",
	"golang.org/x/sync",
	"github.com/alicebob/miniredis/v2",
	"github.com/yuin/gopher-lua",
}

// notLinked are redisync's own packages for tests and the fault harness
// (cmd/redisync-torture), and the testing package they bring.
var notLinked = []string{
	"github.com/redisync/redisync/internal/torture",
	"github.com/redisync/redisync/internal/redistest",
	"github.com/redisync/redisync/internal/locktest",
	"github.com/redisync/redisync/redisynctest",
	"testing",
}

func TestBinaryLinksNeitherTheHarnessNorTestServers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", ".").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "github.com/redis/rueidis ", "go list printed no dependencies")
	std, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	all := strings.Fields(string(std))
	for _, p := range notLinked {
		assert.False(t, slices.Contains(all, p), "the redisync binary links %s", p)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, mod, _ := strings.Cut(line, " ")
		if mod == "github.com/redisync/redisync" || mod == "" {
			continue
		}
		assert.True(t, slices.Contains(linkedModules, mod), "the redisync binary links %s (module %s)", pkg, mod)
	}
}
