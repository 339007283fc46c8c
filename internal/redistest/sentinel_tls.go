package redistest

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TLSSentinel is a deployment that speaks TLS only: a master, a replica and
// Sentinels, none with a cleartext port, all requiring Password, all with
// the certificate of TLSServer (127.0.0.1, signed by CAFile). Each sits
// behind a Recorder, and every address the deployment hands out (the master
// the Sentinels monitor, the replica and Sentinels they announce) is a
// recorder's, so every connection to any of them — the client's, and the
// servers' own among themselves — passes a recorder.
type TLSSentinel struct {
	Master, Replica *Server
	Sentinels       []*Server
	// Recorders: [0] the master's, [1] the replica's, then the Sentinels'.
	Recorders []*Recorder
	// SentinelAddrs are the recorders in front of the Sentinels.
	SentinelAddrs []string
	CAFile        string
	Password      string
}

// StartTLSSentinel starts the TLS-only deployment with n Sentinels (quorum
// n). Its servers cannot be restarted (Restart speaks cleartext).
func StartTLSSentinel(t testing.TB, n int, password string) *TLSSentinel {
	t.Helper()
	dir := t.TempDir()
	caFile, certFile, keyFile := writeCerts(t, dir)
	tlsArgs := func(port int) []string {
		return []string{"port 0", "tls-port " + strconv.Itoa(port), "tls-cert-file " + certFile, "tls-key-file " + keyFile,
			"tls-ca-cert-file " + caFile, "tls-auth-clients no", "tls-replication yes", "bind 127.0.0.1",
			"requirepass " + password, "masterauth " + password}
	}
	sn := &TLSSentinel{CAFile: caFile, Password: password}
	port := func() int {
		p, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		return p
	}

	masterPort, replicaPort := port(), port()
	masterRec := NewRecorder(t, "127.0.0.1:"+strconv.Itoa(masterPort))
	replicaRec := NewRecorder(t, "127.0.0.1:"+strconv.Itoa(replicaPort))
	sn.Recorders = append(sn.Recorders, masterRec, replicaRec)
	sn.Master = startTLSOnly(t, masterPort, caFile, false, tlsArgs(masterPort))
	sn.Replica = startTLSOnly(t, replicaPort, caFile, false, append(tlsArgs(replicaPort),
		"replicaof 127.0.0.1 "+strconv.Itoa(masterRec.Port()),
		"replica-announce-ip 127.0.0.1", "replica-announce-port "+strconv.Itoa(replicaRec.Port())))
	for range n {
		p := port()
		rec := NewRecorder(t, "127.0.0.1:"+strconv.Itoa(p))
		sn.Recorders = append(sn.Recorders, rec)
		sn.SentinelAddrs = append(sn.SentinelAddrs, rec.Addr())
		sn.Sentinels = append(sn.Sentinels, startTLSOnly(t, p, caFile, true, append(tlsArgs(p),
			"sentinel announce-ip 127.0.0.1",
			"sentinel announce-port "+strconv.Itoa(rec.Port()),
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", MasterSet, masterRec.Port(), n),
			"sentinel auth-pass "+MasterSet+" "+password,
			"sentinel sentinel-pass "+password,
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", MasterSet, DownAfter.Milliseconds()),
			"sentinel failover-timeout "+MasterSet+" 5000")))
	}
	return sn
}

// startTLSOnly starts a redis-server (or Sentinel) from config lines written
// to a file, ready when it answers PING over TLS on port.
func startTLSOnly(t testing.TB, port int, caFile string, sentinel bool, conf []string) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), port: port, sentinel: sentinel}
	conf = append(conf, "dir "+s.dir, "logfile "+s.dir+"/redis.log", "save \"\"", "appendonly no")
	if sentinel {
		// Sentinels reject server-only directives.
		kept := conf[:0:0]
		for _, line := range conf {
			if !strings.HasPrefix(line, "save ") && !strings.HasPrefix(line, "appendonly ") && !strings.HasPrefix(line, "masterauth ") {
				kept = append(kept, line)
			}
		}
		conf = kept
	}
	path := s.dir + "/redis.conf"
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	args := []string{path}
	if sentinel {
		args = append(args, "--sentinel")
	}
	cmd := exec.Command(Binary, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("redistest: start %s: %v", Binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.proc, s.exited = cmd.Process, exited
	t.Cleanup(s.Kill)
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(caFile)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("redistest: CA %s: %v", caFile, err)
	}
	deadline := time.Now().Add(startTimeout)
	for !tlsPing(s.Addr(), pool) {
		select {
		case err := <-exited:
			s.mu.Lock()
			s.proc = nil
			s.mu.Unlock()
			logTail, _ := os.ReadFile(s.dir + "/redis.log")
			t.Fatalf("redistest: TLS redis-server exited: %v: %s", err, lastLines(string(logTail), 5))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: TLS redis-server on port %d did not answer within %v", port, startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// tlsPing reports whether a TLS server at addr answers PING (with PONG, or
// NOAUTH when it wants a password).
func tlsPing(addr string, pool *x509.CertPool) bool {
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}
