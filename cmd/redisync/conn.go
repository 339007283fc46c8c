package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// connectTimeout bounds the first contact with the server.
const connectTimeout = 5 * time.Second

// exitCloseTimeout bounds how long run and sem run wait on their way out
// for the release of their hold (which returns within redisync.UndoWait of
// this bound), the Client's tasks (the undo of a cancelled wait: the queue
// left, a grant given back) and the connection to close: one budget for
// all. A live server answers them in a round trip; a stalled one would
// hold the exit for seconds (redisync.CloseTimeout, then rueidis's own
// close), and the process ends right after anyway: a hold it could not
// release expires with its lease, what it could not undo likewise, or its
// place in a queue lapses.
const exitCloseTimeout = time.Second

// closeWithin runs closers in order, waiting for them for at most d.
func closeWithin(d time.Duration, closers ...func()) {
	done := make(chan struct{})
	go func() { // awaited below, or left to the process's exit
		defer close(done)
		for _, f := range closers {
			f()
		}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// defaultURL is used by the commands that need a real server when neither
// --redis nor REDIS_URL is given.
const defaultURL = "redis://127.0.0.1:6379"

// Environment variables the connection flags read. run removes them (and
// every other REDISYNC_ variable) from the command's environment unless
// --pass-env: they carry credentials the command was not given.
const (
	envURL          = "REDIS_URL"
	envUser         = "REDIS_USER"
	envPassword     = "REDIS_PASSWORD"
	envPasswordFile = "REDISYNC_PASSWORD_FILE"
	envPrefix       = "REDISYNC_"
)

// connFlags are the connection flags every command shares.
type connFlags struct {
	url          string
	user         string
	password     string
	passwordFile string
	tls          bool
	tlsCA        string
	cluster      bool
	sentinel     string
}

func addConnFlags(fs *flag.FlagSet, embedded bool) *connFlags {
	c := &connFlags{}
	def := "$" + envURL + ", else " + defaultURL
	if embedded {
		def = "$" + envURL + ", else " + embeddedDefault
	}
	fs.StringVar(&c.url, "redis", "", "Redis URL: redis://[user:password@]host:port[/db], rediss:// for TLS, or host:port (default "+def+")")
	fs.StringVar(&c.user, "user", "", "username (overrides the URL's; $"+envUser+")")
	fs.StringVar(&c.password, "password", "", "password (overrides the URL's; $"+envPassword+"); other users of the machine can read it in ps: prefer --password-file")
	fs.StringVar(&c.passwordFile, "password-file", "", "read the password from this file's first line ($"+envPasswordFile+")")
	fs.BoolVar(&c.tls, "tls", false, "use TLS even with a redis:// URL (to the Sentinels, the master and replicas, and every Cluster node)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM file of the CA that signed the servers' certificates (implies --tls)")
	fs.BoolVar(&c.cluster, "cluster", false, "the URL names a Redis Cluster node; fail if it is not a Cluster")
	fs.StringVar(&c.sentinel, "sentinel", "", "the URL names Sentinels (more with ?addr=host:port); connect to the master of this master set")
	return c
}

// options works out the rueidis options from the flags and the environment,
// and where it connects (its URL, redacted). Every password it meets is
// registered with the redactor before anything can print it.
func (c *connFlags) options() (rueidis.ClientOption, string, error) {
	raw, from := c.url, "--redis"
	if raw == "" {
		raw, from = os.Getenv(envURL), "$"+envURL
	}
	if raw == "" {
		raw, from = defaultURL, "the default URL"
	}
	if !strings.Contains(raw, "://") {
		raw = "redis://" + raw // host:port
	}
	// The user info is taken out first, by construction: where and every
	// message below are built from the URL without it, so no rewriting or
	// parser error can carry a piece of the password.
	addURLSecret(raw)
	_, hasInfo := userInfo(raw)
	where := redactURL(raw)
	const want = "want redis://[user:password@]host:port[/db], rediss:// for TLS, or host:port"
	if scheme, _, _ := strings.Cut(raw, "://"); strings.HasSuffix(strings.ToLower(scheme), "+sentinel") {
		return rueidis.ClientOption{}, where, fmt.Errorf("bad Redis URL %s from %s: the command takes no %s:// URL: name the Sentinels with redis:// (rediss:// for TLS; more with ?addr=host:port) and the master set with --sentinel MASTERSET", where, from, scheme)
	}
	if fixed, ok := queryAt(raw); ok {
		return rueidis.ClientOption{}, fixed, fmt.Errorf("bad Redis URL from %s: an '@' in its query reads as the end of a password: write it %%40, as in %s", from, fixed)
	}
	if hasInfo && !userInfoIsAuthority(raw) {
		// Go's parser ends the user info at a '/', '?' or '#' before the
		// last '@': it would read the rest of the password as the host,
		// the database or a query.
		return rueidis.ClientOption{}, where, fmt.Errorf("bad Redis URL %s from %s: a '/', '?' or '#' before the last '@' (shown as *** with all before it: percent-encode them in a user name or password: %%2F %%3F %%23; an '@' in a query: %%40; %s)", where, from, want)
	}
	opt, err := rueidis.ParseURL(raw)
	if err != nil {
		return rueidis.ClientOption{}, where, fmt.Errorf("bad Redis URL %s from %s: %s (%s)", where, from, parseFault(where), want)
	}
	if u := first(c.user, os.Getenv(envUser)); u != "" {
		opt.Username = u
	}
	pw, err := c.secret()
	if err != nil {
		return opt, where, err
	}
	if pw != "" {
		opt.Password = pw
	}
	addSecret(opt.Password)
	// ?master_set= names Sentinels as --sentinel does, and gets the same
	// legs: TLS, credentials and timeout reach the Sentinels too.
	master := c.sentinel
	if set := opt.Sentinel.MasterSet; set != "" {
		if master != "" && master != set {
			return opt, where, fmt.Errorf("--sentinel %s and the URL's master_set=%s name two master sets", printable(master), printable(set))
		}
		master = set
	}
	skipVerify, err := urlSkipVerify(raw)
	if err != nil {
		return opt, where, err
	}
	if c.tls || c.tlsCA != "" || opt.TLSConfig != nil {
		cfg, err := tlsConfig(c.tlsCA)
		if err != nil {
			return opt, where, err
		}
		if opt.TLSConfig != nil && !c.cluster && master == "" {
			cfg.ServerName = opt.TLSConfig.ServerName // the one server the URL names
		}
		// Otherwise every node (Sentinels, the master they name, Cluster
		// nodes) is verified under its own address: ServerName stays empty.
		cfg.InsecureSkipVerify = skipVerify
		opt.TLSConfig = cfg
	} else if skipVerify {
		return opt, where, fmt.Errorf("bad Redis URL %s from %s: skip_verify without TLS (rediss://, --tls)", where, from)
	}
	// The URL's dial_timeout, else connectTimeout, on every leg.
	if opt.Dialer.Timeout <= 0 {
		opt.Dialer.Timeout = connectTimeout
	}
	if master != "" {
		opt.Sentinel.MasterSet = master
		opt.Sentinel.Username, opt.Sentinel.Password = opt.Username, opt.Password
		// rueidis talks to the Sentinels with their own TLS settings; without
		// these the Sentinel leg (and its AUTH) would go out in cleartext.
		if opt.TLSConfig != nil {
			opt.Sentinel.TLSConfig = opt.TLSConfig.Clone()
		}
		opt.Sentinel.Dialer.Timeout = opt.Dialer.Timeout
	}
	return opt, where, nil
}

// urlSkipVerify reads the URL's skip_verify option as rueidis.ParseURL
// does (present and empty, or a true boolean), also for a redis:// URL with
// --tls, where rueidis does not read it.
func urlSkipVerify(raw string) (bool, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.Query().Has("skip_verify") {
		return false, nil
	}
	v := u.Query().Get("skip_verify")
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("bad Redis URL option skip_verify=%s: want true or false", printable(v))
	}
	return b, nil
}

// secret returns the password from --password, --password-file,
// $REDISYNC_PASSWORD_FILE or $REDIS_PASSWORD, in that order ("" if none).
func (c *connFlags) secret() (string, error) {
	if c.password != "" {
		addSecret(c.password)
		return c.password, nil
	}
	file, from := c.passwordFile, "--password-file"
	if file == "" {
		file, from = os.Getenv(envPasswordFile), "$"+envPasswordFile
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %v", from, err)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		pw = strings.TrimSuffix(pw, "\r")
		if pw == "" {
			return "", fmt.Errorf("%s: %s has no password on its first line", from, file)
		}
		addSecret(pw)
		return pw, nil
	}
	pw := os.Getenv(envPassword)
	addSecret(pw)
	return pw, nil
}

// connect returns a rueidis client, a description of where it is connected
// (redacted), and a function that closes it. With embedded set and no URL
// given, it starts the embedded server (embedded.go).
func (c *connFlags) connect(embedded bool) (rueidis.Client, string, func(), error) {
	if embedded && c.url == "" && os.Getenv(envURL) == "" {
		return connectEmbedded()
	}
	return c.connectBounded(0)
}

// connectBounded is connect without the embedded server. A bound > 0 caps
// the whole first contact (dial, handshake and PING) and the client's later
// dials, so that run can fit an attempt into what is left of --wait.
func (c *connFlags) connectBounded(bound time.Duration) (rueidis.Client, string, func(), error) {
	opt, where, err := c.options()
	if err != nil {
		return nil, "", nil, err
	}
	if bound > 0 {
		opt.Dialer.Timeout = min(opt.Dialer.Timeout, bound)
	}
	start := time.Now()
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, "", nil, fmt.Errorf("cannot reach Redis at %s: %w", where, err)
	}
	ping := max(connectTimeout, opt.Dialer.Timeout)
	if bound > 0 { // the PING gets what the handshake left of the bound
		ping = max(bound-time.Since(start), time.Nanosecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ping)
	defer cancel()
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		rc.Close()
		return nil, "", nil, fmt.Errorf("cannot reach Redis at %s: %w", where, err)
	}
	if c.cluster && rc.Mode() != rueidis.ClientModeCluster {
		rc.Close()
		return nil, "", nil, fmt.Errorf("--cluster: %s is not a Redis Cluster", where)
	}
	return rc, where, rc.Close, nil
}

func tlsConfig(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("--tls-ca: no PEM certificate in " + caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// parseFault says why a URL failed to parse, from its redacted form where:
// the parser's own error quotes the text it choked on, and the user info
// must not be part of that text. When where parses, the fault is in the
// user info.
func parseFault(where string) string {
	_, err := rueidis.ParseURL(where)
	if err == nil {
		return "the user info is malformed (percent-encode % [ ] and spaces in a user name or password: %25 %5B %5D %20)"
	}
	// url.Parse quotes the whole URL in its error; keep only the reason.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
