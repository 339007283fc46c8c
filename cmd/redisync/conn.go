package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// connectTimeout bounds the first contact with the server.
const connectTimeout = 5 * time.Second

// defaultURL is used by the commands that need a real server when neither
// --redis nor REDIS_URL is given.
const defaultURL = "redis://127.0.0.1:6379"

// connFlags are the connection flags every command shares.
type connFlags struct {
	url      string
	user     string
	password string
	tls      bool
	tlsCA    string
	cluster  bool
	sentinel string
}

func addConnFlags(fs *flag.FlagSet, embedded bool) *connFlags {
	c := &connFlags{}
	def := "$REDIS_URL, else " + defaultURL
	if embedded {
		def = "$REDIS_URL, else an embedded in-process Redis"
	}
	fs.StringVar(&c.url, "redis", "", "Redis URL: redis://[user:password@]host:port[/db], rediss:// for TLS (default "+def+")")
	fs.StringVar(&c.user, "user", "", "username (overrides the URL's; $REDIS_USER)")
	fs.StringVar(&c.password, "password", "", "password (overrides the URL's; $REDIS_PASSWORD)")
	fs.BoolVar(&c.tls, "tls", false, "use TLS even with a redis:// URL")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM file of the CA that signed the server's certificate (implies --tls)")
	fs.BoolVar(&c.cluster, "cluster", false, "the URL names a Redis Cluster node; fail if it is not a Cluster")
	fs.StringVar(&c.sentinel, "sentinel", "", "the URL names Sentinels; connect to the master of this master set")
	return c
}

// connect returns a rueidis client, a description of where it is connected,
// and a function that closes it. With embedded set and no URL given, it
// starts an in-process miniredis.
func (c *connFlags) connect(embedded bool) (rueidis.Client, string, func(), error) {
	url := c.url
	if url == "" {
		url = os.Getenv("REDIS_URL")
	}
	if url == "" && embedded {
		return connectEmbedded()
	}
	if url == "" {
		url = defaultURL
	}
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		return nil, "", nil, fmt.Errorf("bad --redis URL %q: %v (want redis://[user:password@]host:port[/db])", url, err)
	}
	if u := first(c.user, os.Getenv("REDIS_USER")); u != "" {
		opt.Username = u
	}
	if p := first(c.password, os.Getenv("REDIS_PASSWORD")); p != "" {
		opt.Password = p
	}
	if c.tls || c.tlsCA != "" {
		cfg, err := tlsConfig(c.tlsCA)
		if err != nil {
			return nil, "", nil, err
		}
		opt.TLSConfig = cfg
	}
	if c.sentinel != "" {
		opt.Sentinel.MasterSet = c.sentinel
		opt.Sentinel.Username, opt.Sentinel.Password = opt.Username, opt.Password
	}
	opt.Dialer.Timeout = connectTimeout
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, "", nil, fmt.Errorf("cannot reach Redis at %s: %v", url, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		rc.Close()
		return nil, "", nil, fmt.Errorf("cannot reach Redis at %s: %v", url, err)
	}
	if c.cluster && rc.Mode() != rueidis.ClientModeCluster {
		rc.Close()
		return nil, "", nil, fmt.Errorf("--cluster: %s is not a Redis Cluster", url)
	}
	return rc, url, rc.Close, nil
}

func connectEmbedded() (rueidis.Client, string, func(), error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return nil, "", nil, fmt.Errorf("start embedded redis: %v", err)
	}
	// miniredis speaks RESP2 only, has no client tracking, and answers
	// CLUSTER commands (which would make rueidis assume a Cluster).
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{mr.Addr()}, AlwaysRESP2: true, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		mr.Close()
		return nil, "", nil, fmt.Errorf("connect to embedded redis: %v", err)
	}
	return rc, "embedded miniredis at " + mr.Addr(), func() { rc.Close(); mr.Close() }, nil
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
