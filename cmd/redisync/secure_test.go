package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/internal/redistest"
)

// cliEnv runs the binary with exactly env added to ours minus REDIS_URL
// (cli always sets one; these tests choose).
func cliEnv(t *testing.T, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_") && !strings.HasPrefix(kv, "REDISYNC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return cliResult{code, out.String(), errOut.String()}
}

// No output of the command, on any path that can carry a URL or a
// password, contains the password: user info in URLs shows as ***.
func TestNoOutputCarriesThePassword(t *testing.T) {
	const secret = "secret"
	tlsSrv := redistest.StartTLS(t)
	authed := redistest.Start(t)
	redistest.Do(t, authed.Client(t), "CONFIG", "SET", "requirepass", "right-"+secret)
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte("wrong-"+secret+"\n"), 0o600))

	down := "redis://u:" + secret + "@127.0.0.1:1"
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"demo, unreachable", nil, []string{"demo", "--redis", down}},
		{"demo, $REDIS_URL unreachable", []string{"REDIS_URL=" + down}, []string{"demo"}},
		{"run, unreachable", nil, []string{"run", "--wait", "0", "--redis", down, "x", "--", "true"}},
		{"run, unreachable, retried", nil, []string{"run", "--wait", "300ms", "--redis", down, "x", "--", "true"}},
		{"run, $REDIS_URL unreachable", []string{"REDIS_URL=" + down}, []string{"run", "--wait", "0", "x", "--", "true"}},
		{"sem run, unreachable", nil, []string{"sem", "run", "--wait", "0", "--permits", "1", "--redis", down, "x", "--", "true"}},
		{"sem set-permits, unreachable", nil, []string{"sem", "set-permits", "--redis", down, "x", "3"}},
		{"inspect, unreachable", nil, []string{"inspect", "--redis", down, "x"}},
		{"inspect --json, unreachable", nil, []string{"inspect", "--json", "--redis", down, "x"}},
		{"unlock, unreachable", nil, []string{"unlock", "--force", "--yes", "--redis", down, "x"}},
		{"bad port", nil, []string{"inspect", "--redis", "redis://u:" + secret + "@127.0.0.1:notaport", "x"}},
		{"malformed URL", nil, []string{"inspect", "--redis", "redis://u:" + secret + "@[::1", "x"}},
		{"password with brackets", nil, []string{"inspect", "--redis", "redis://u:[" + secret + "]@127.0.0.1:1", "x"}},
		{"bad scheme", nil, []string{"inspect", "--redis", "http://u:" + secret + "@127.0.0.1:1", "x"}},
		{"$REDIS_URL malformed", []string{"REDIS_URL=redis://u:" + secret + "@%zz:1"}, []string{"inspect", "x"}},
		{"password only, no user", nil, []string{"inspect", "--redis", "redis://:" + secret + "@127.0.0.1:1", "x"}},
		{"wrong password in URL", nil, []string{"inspect", "--redis", "redis://default:wrong-" + secret + "@" + authed.Addr(), "x"}},
		{"wrong --password", nil, []string{"inspect", "--redis", authed.Addr(), "--password", "wrong-" + secret, "x"}},
		{"wrong $REDIS_PASSWORD", []string{"REDIS_PASSWORD=wrong-" + secret}, []string{"inspect", "--redis", authed.Addr(), "x"}},
		{"wrong --password-file", nil, []string{"inspect", "--redis", authed.Addr(), "--password-file", pwFile, "x"}},
		{"TLS, unknown CA", nil, []string{"inspect", "--redis", "rediss://u:" + secret + "@" + tlsSrv.TLSAddr, "x"}},
		{"--cluster on a single server", nil, []string{"inspect", "--cluster", "--redis", "redis://:right-" + secret + "@" + authed.Addr(), "x"}},
		{"--sentinel over TLS, unknown CA", nil, []string{"inspect", "--sentinel", "m", "--redis", "rediss://u:" + secret + "@" + tlsSrv.TLSAddr, "x"}},
		{"--sentinel, unreachable", nil, []string{"inspect", "--sentinel", "m", "--redis", down, "x"}},
		{"--sentinel on a plain server", nil, []string{"inspect", "--sentinel", "m", "--redis", "redis://:right-" + secret + "@" + authed.Addr(), "x"}},
		{"demo, reachable", nil, []string{"demo", "--duration", "200ms", "--redis", "redis://:right-" + secret + "@" + authed.Addr()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cliEnv(t, c.env, "", c.args...)
			all := r.stdout + r.stderr
			assert.NotContains(t, all, secret, "exit %d", r.code)
			if c.name != "demo, reachable" {
				assert.NotEqual(t, 0, r.code, all)
				lines := 1
				if strings.HasSuffix(c.name, "retried") {
					lines = 2 // the first retry is said, then the end of --wait
				}
				assert.Equal(t, lines, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "lines: %q", r.stderr)
			} else {
				assert.Equal(t, 0, r.code, all)
				assert.Contains(t, r.stdout, "redis://***@", "where it runs, redacted")
			}
		})
	}

	// The issue's own words: go run, as a new user would.
	out, err := exec.Command("go", "run", ".", "demo", "--redis", down).CombinedOutput()
	assert.Error(t, err)
	assert.NotContains(t, string(out), secret)
	assert.Contains(t, string(out), "redis://***@127.0.0.1:1")
}

// The redaction rule itself, on text shapes the command can print.
func TestRedactHidesUserInfoOfEveryURL(t *testing.T) {
	for in, want := range map[string]string{
		"cannot reach Redis at redis://u:pw@h:1: dial": "cannot reach Redis at redis://***@h:1: dial",
		`"url": "rediss://:pw@h:1/0"`:                  `"url": "rediss://***@h:1/0"`,
		"a redis://h:1 b":                              "a redis://h:1 b",
		"x unix://u:pw@/tmp/s and http://a:b@c/d@e":    "x unix://***@/tmp/s and http://***@e",
		"redis://[user:password@]host:port":            "redis://[user:password@]host:port",
		// The user info runs to the URL's last '@': a password's '@', '/'
		// or '#' does not end it.
		"unknown command redis://u:Tr0ub@dor2024@db:1": "unknown command redis://***@db:1",
		"name   redis://u:Tr0/ub@d0r#24@db:1\n":        "name   redis://***@db:1\n",
		`cannot start "redis://u:a"b@c@h": no`:         `cannot start "redis://***@h": no`,
		// A unix:// URL with an empty authority has no user info: an '@'
		// in its path stays.
		"at unix:///run/redis@main.sock: refused": "at unix:///run/redis@main.sock: refused",
	} {
		assert.Equal(t, want, redactString(in), in)
	}
}

// Owner ids, names and field values from Redis are shown with their control
// characters escaped — in inspect's table, in unlock's prompt, and in JSON —
// so a client cannot rewrite the operator's terminal.
func TestOutputFromRedisIsEscapedForTheTerminal(t *testing.T) {
	e := locktest.Setup(t)
	evil := "\r\x1b[2K\x1b]0;pwned\x07 nothing is held; safe\u202e"
	e.Do(t, "HSET", "esc:lock", evil, "1", "redisync:token", "7")
	e.Do(t, "PEXPIRE", "esc:lock", "60000")
	e.Do(t, "HSET", "esc:\x1b[31mred", "owner", "1")
	e.Do(t, "PEXPIRE", "esc:\x1b[31mred", "60000")

	check := func(what, out string) {
		t.Helper()
		for _, raw := range []string{"\x1b", "\r", "\x07", "\u202e"} {
			assert.NotContains(t, out, raw, "%s printed a raw control character: %q", what, out)
		}
	}
	r := cli(t, e, "", "inspect", "esc:lock")
	require.Equal(t, 0, r.code, r.stderr)
	check("inspect", r.stdout)
	assert.Contains(t, r.stdout, `\r\x1b[2K\x1b]0;pwned\x07 nothing is held; safe\u202e`)

	r = cli(t, e, "n\n", "unlock", "--force", "esc:lock")
	check("unlock's prompt", r.stdout+r.stderr)
	assert.Contains(t, r.stderr, `\x1b[2K`)

	r = cli(t, e, "", "inspect", "--json", "esc:lock")
	require.Equal(t, 0, r.code, r.stderr)
	check("inspect --json", r.stdout)
	var got inspection
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got.Holders, 1)
	assert.Equal(t, evil, got.Holders[0].Owner, "JSON keeps the value, escaped")

	r = cli(t, e, "", "inspect", "esc:\x1b[31mred")
	check("inspect of a name with escapes", r.stdout+r.stderr)
	r = cli(t, e, "", "nope\x1b[2J")
	check("unknown command", r.stdout+r.stderr)
	assert.Equal(t, exitUsage, r.code)
}

// run takes the connection variables out of the command's environment
// unless --pass-env.
func TestRunKeepsCredentialsFromTheCommand(t *testing.T) {
	e := locktest.Setup(t)
	env := []string{"REDIS_URL=redis://" + e.Srv.Addr(), "REDIS_PASSWORD=", "REDIS_USER=default", "REDISYNC_TOKEN=x", "KEEP_ME=1"}
	r := cliEnv(t, env, "", "run", "env:job", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	for _, k := range []string{"REDIS_URL=", "REDIS_PASSWORD=", "REDIS_USER=", "REDISYNC_TOKEN="} {
		assert.NotContains(t, r.stdout, k)
	}
	assert.Contains(t, r.stdout, "KEEP_ME=1")
	r = cliEnv(t, env, "", "run", "--pass-env", "env:job", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "REDIS_URL=")
	assert.Contains(t, r.stdout, "REDISYNC_TOKEN=x")
	r = cliEnv(t, env, "", "run", "--help")
	assert.Contains(t, r.stdout, "--pass-env")
	assert.Contains(t, r.stdout, "ps", "--password's help warns that ps shows it")
	assert.Contains(t, r.stdout, "--password-file")
}

// --password-file and $REDISYNC_PASSWORD_FILE give the password without
// putting it on the command line.
func TestPasswordFile(t *testing.T) {
	srv := redistest.Start(t)
	redistest.Do(t, srv.Client(t), "CONFIG", "SET", "requirepass", "from-a-file")
	file := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(file, []byte("from-a-file\n"), 0o600))
	r := cliEnv(t, nil, "", "inspect", "--redis", srv.Addr(), "x")
	assert.Equal(t, exitError, r.code, "no password, yet connected")
	r = cliEnv(t, nil, "", "inspect", "--redis", srv.Addr(), "--password-file", file, "x")
	assert.Equal(t, 0, r.code, r.stderr)
	r = cliEnv(t, []string{"REDISYNC_PASSWORD_FILE=" + file, "REDIS_URL=" + srv.Addr()}, "", "inspect", "x")
	assert.Equal(t, 0, r.code, r.stderr)
	r = cliEnv(t, nil, "", "inspect", "--redis", srv.Addr(), "--password-file", file+".missing", "x")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "--password-file")
}

// A TLS-only Sentinel deployment (master, replica, Sentinels; passwords
// everywhere) is usable with rediss:// and --tls-ca, and every connection to
// any of its servers — the command's and the servers' own — starts with a
// TLS handshake: no AUTH, no command, goes out in cleartext.
func TestSentinelOverTLSOnly(t *testing.T) {
	const password = "tls-sentinel-pw"
	sn := redistest.StartTLSSentinel(t, 2, password)
	url := "rediss://:" + password + "@" + sn.SentinelAddrs[0] + "?addr=" + sn.SentinelAddrs[1]
	r := cliEnv(t, nil, "", "run", "--redis", url, "--tls-ca", sn.CAFile, "--sentinel", redistest.MasterSet,
		"--fence-env", "TOKEN", "job:tls-sentinel", "--", "sh", "-c", `echo "token=$TOKEN"`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "token=")
	r = cliEnv(t, nil, "", "inspect", "--json", "--redis", url, "--tls-ca", sn.CAFile, "--sentinel", redistest.MasterSet, "job:tls-sentinel")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, password)

	seen := 0
	for i, rec := range sn.Recorders {
		for _, first := range rec.Firsts() {
			seen++
			require.GreaterOrEqual(t, len(first), 2, "%s: %q", rec, first)
			assert.Equal(t, []byte{0x16, 0x03}, first[:2], "%s (recorder %d): a connection began with %q, not a TLS handshake", rec, i, first)
		}
	}
	assert.NotEmpty(t, sn.Recorders[0].Firsts(), "nothing reached the master through its recorder")
	assert.NotEmpty(t, sn.Recorders[2].Firsts(), "nothing reached the first Sentinel through its recorder")
	t.Logf("%d connections, every one TLS", seen)
}

// A TLS-only Redis Cluster (no cleartext port on any node, a password
// everywhere) is usable with rediss:// and --tls-ca: every node the client
// is redirected to is reached over TLS and verified under its own address.
func TestClusterOverTLSOnly(t *testing.T) {
	const password = "tls-cluster-pw"
	cl := redistest.StartTLSCluster(t, 3, password)
	url := "rediss://:" + password + "@" + cl.Addrs[0]
	for _, name := range []string{"job:a", "job:b", "job:c", "job:d"} { // slots on several nodes
		r := cliEnv(t, nil, "", "run", "--redis", url, "--tls-ca", cl.CAFile, "--cluster", "--fence-env", "TOKEN", name, "--", "sh", "-c", `echo "token=$TOKEN"`)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "token=")
	}
	r := cliEnv(t, nil, "", "inspect", "--redis", url, "--cluster", "job:a")
	assert.Equal(t, exitError, r.code, "a certificate from an unknown CA must be refused")
	assert.NotContains(t, r.stdout+r.stderr, password)
}
