//go:build interop

package interop

import (
	"os/exec"
	"testing"
)

// TestRedissonNames runs the Java suite (interop/java, JUnit 5): Redisson's
// own channels and read-hold keys for the name shapes of internal/keys'
// TestRedissonNames table, seen on the server.
func TestRedissonNames(t *testing.T) {
	cmd := exec.Command("mvn", "-B", "-q", "-o", "surefire:test", "-Dredis.address=redis://"+srv.Addr())
	cmd.Dir = "java"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("interop: JUnit suite: %v\n%s", err, out)
	}
}
