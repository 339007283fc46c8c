package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
)

// A URL that reaches the output other than by --redis — given where a
// subcommand, a NAME or run's command belongs (`redisync "$REDIS_URL"
// inspect x`) — shows no piece of its password, whatever characters the
// password has ('@', '/', '#').
func TestNoOutputShowsThePasswordOfAURLOutsideTheFlags(t *testing.T) {
	e := locktest.Setup(t)
	for _, pw := range []string{"Tr0ub@dor2024", "Tr0/ub4dor2024", "Tr0ub4dor#2024"} {
		url := "redis://u:" + pw + "@db.internal:6379"
		for _, args := range [][]string{
			{url, "inspect", "x"},
			{"inspect", url},
			{"inspect", "--json", url},
			{"run", "--wait", "0", "url:cmd", "--", url},
			{"run", "--wait", "0", "url:arg", "--", "/nonexistent/cmd", url},
		} {
			r := cli(t, e, "", args...)
			assert.NotContains(t, r.stdout+r.stderr, "dor2024", "%q: a fragment of the password is printed:\n%s%s", args, r.stdout, r.stderr)
		}
	}
}

// ?master_set= in the URL names Sentinels as --sentinel does, with the same
// legs: on a TLS-only deployment with a password everywhere the command
// connects, and every connection begins with a TLS handshake.
func TestMasterSetInTheURLGetsTLSAndAuthOnEveryLeg(t *testing.T) {
	const password = "tls-sentinel-pw"
	sn := redistest.StartTLSSentinel(t, 2, password)
	url := "rediss://:" + password + "@" + sn.SentinelAddrs[0] + "?master_set=" + redistest.MasterSet + "&addr=" + sn.SentinelAddrs[1]
	r := cliEnv(t, nil, "", "inspect", "--redis", url, "--tls-ca", sn.CAFile, "url:master-set")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "not locked")
	for i, rec := range sn.Recorders {
		for _, first := range rec.Firsts() {
			require.GreaterOrEqual(t, len(first), 2, "%s: %q", rec, first)
			assert.Equal(t, []byte{0x16, 0x03}, first[:2], "recorder %d: a connection began with %q, not a TLS handshake", i, first)
		}
	}
	assert.NotEmpty(t, sn.Recorders[2].Firsts(), "nothing reached the first Sentinel through its recorder")

	r = cliEnv(t, nil, "", "inspect", "--redis", url, "--tls-ca", sn.CAFile, "--sentinel", "other", "url:master-set")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "two master sets")
}

// redis+sentinel:// is refused with a pointer to --sentinel.
func TestSentinelSchemePointsToTheSentinelFlag(t *testing.T) {
	r := cliEnv(t, nil, "", "inspect", "--redis", "redis+sentinel://:pw-secret@127.0.0.1:1/mymaster", "x")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "--sentinel")
	assert.NotContains(t, r.stderr, "pw-secret")
}

// The URL's skip_verify is honoured: rediss:// to a server whose CA the
// command does not know connects with it and fails without it.
func TestURLSkipVerifyIsHonoured(t *testing.T) {
	srv := redistest.StartTLS(t)
	r := cliEnv(t, nil, "", "inspect", "--redis", "rediss://"+srv.TLSAddr+"?skip_verify=true", "url:x")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "not locked")
	r = cliEnv(t, nil, "", "inspect", "--redis", "rediss://"+srv.TLSAddr, "url:x")
	assert.Equal(t, 1, r.code, "without skip_verify the certificate is verified")
	r = cliEnv(t, nil, "", "inspect", "--redis", "rediss://"+srv.TLSAddr+"?skip_verify=maybe", "url:x")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "skip_verify=maybe")
}

// A unix:// URL has no authority, so an '@' in its socket path is part of
// the path (systemd instances: redis@main.sock), not the end of a password.
func TestUnixSocketPathWithAnAtConnects(t *testing.T) {
	// Not t.TempDir: its path can pass a socket path's 108 bytes.
	dir, err := os.MkdirTemp("", "url")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "redis@main.sock")
	redistest.StartArgs(t, "--unixsocket", sock, "--unixsocketperm", "700")
	r := cliEnv(t, nil, "", "inspect", "--redis", "unix://"+sock, "url:x")
	assert.Equal(t, 0, r.code, "unix://%s: %s", sock, r.stderr)
	assert.Contains(t, r.stdout, "not locked")
}

// A URL without user info whose query has an '@' is refused with the URL as
// it must be written: the host and port it names, the '@' as %40.
func TestQueryWithAnAtIsRefusedShowingTheURLToWrite(t *testing.T) {
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr() + "/0?client_name=cron@web1"
	r := cliEnv(t, nil, "", "inspect", "--redis", url, "url:x")
	require.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "redis://"+srv.Addr()+"/0?client_name=cron%40web1", r.stderr)
	assert.NotContains(t, r.stderr, "***", r.stderr)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, r.stderr)
}

// The URL's dial_timeout bounds the dial on every leg (the default is
// connectTimeout), and skip_verify reaches the TLS config the command
// builds, also with --sentinel.
func TestURLDialTimeoutAndSkipVerifyReachEveryLeg(t *testing.T) {
	c := &connFlags{url: "rediss://127.0.0.1:1?dial_timeout=250ms&skip_verify=true", sentinel: "m"}
	opt, _, err := c.options()
	require.NoError(t, err)
	assert.Equal(t, 250*time.Millisecond, opt.Dialer.Timeout)
	assert.Equal(t, 250*time.Millisecond, opt.Sentinel.Dialer.Timeout)
	require.NotNil(t, opt.TLSConfig)
	assert.True(t, opt.TLSConfig.InsecureSkipVerify)
	require.NotNil(t, opt.Sentinel.TLSConfig)
	assert.True(t, opt.Sentinel.TLSConfig.InsecureSkipVerify)

	c = &connFlags{url: "redis://127.0.0.1:1"}
	opt, _, err = c.options()
	require.NoError(t, err)
	assert.Equal(t, connectTimeout, opt.Dialer.Timeout)
	assert.Nil(t, opt.TLSConfig)

	c = &connFlags{url: "redis://127.0.0.1:1?skip_verify=true"}
	_, _, err = c.options()
	assert.ErrorContains(t, err, "skip_verify without TLS")
}
