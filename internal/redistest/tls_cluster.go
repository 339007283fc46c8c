package redistest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TLSCluster is a Redis Cluster that speaks TLS only: no node has a
// cleartext port, the cluster bus runs over TLS too, and every node
// requires Password. Its certificates are TLSServer's (127.0.0.1, signed by
// CAFile). A client that reaches it at all spoke TLS on every leg.
type TLSCluster struct {
	Nodes    []*Server
	Addrs    []string // each node's TLS address
	CAFile   string
	Password string
}

// StartTLSCluster starts masters (at least 3) TLS-only cluster nodes and
// joins them with redis-cli --tls --cluster create. Its nodes cannot be
// restarted (Restart speaks cleartext).
func StartTLSCluster(t testing.TB, masters int, password string) *TLSCluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redistest: redis-cli not found on PATH (Debian: apt-get install -y redis-tools)")
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := writeCerts(t, dir)
	c := &TLSCluster{CAFile: caFile, Password: password}
	for range masters {
		port, err := freeBusPort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		n := startTLSOnly(t, port, caFile, false, []string{
			"port 0", "tls-port " + strconv.Itoa(port), "tls-cert-file " + certFile, "tls-key-file " + keyFile,
			"tls-ca-cert-file " + caFile, "tls-auth-clients no", "tls-cluster yes", "tls-replication yes",
			"bind 127.0.0.1", "requirepass " + password, "masterauth " + password,
			"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 2000",
		})
		c.Nodes = append(c.Nodes, n)
		c.Addrs = append(c.Addrs, n.Addr())
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := c.cli(args...); err != nil {
		logTail, _ := os.ReadFile(c.Nodes[0].dir + "/redis.log")
		t.Fatalf("redistest: redis-cli --tls --cluster create: %v: %s; first node's log: %s", err, lastLines(out, 5), lastLines(string(logTail), 8))
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, addr := range c.Addrs {
		for {
			host, port, _ := strings.Cut(addr, ":")
			info, err := c.cli("-h", host, "-p", port, "CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: TLS cluster not ready: %v %s", err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// cli runs redis-cli over TLS with the cluster's CA and password.
func (c *TLSCluster) cli(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	full := append([]string{"--tls", "--cacert", c.CAFile, "--no-auth-warning", "-a", c.Password}, args...)
	out, err := exec.CommandContext(ctx, "redis-cli", full...).CombinedOutput()
	return string(out), err
}

// freeBusPort returns a free port whose cluster bus port (port+10000, which
// redis-cli --cluster create assumes) is free too.
func freeBusPort() (int, error) {
	var err error
	for range 100 {
		p := 20000 + rand.IntN(25000)
		var a, b net.Listener
		if a, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err != nil {
			continue
		}
		b, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port pair: %v", err)
}
