//go:build interop

package interop

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRedissonNames runs the Java suite (interop/java, JUnit 5): Redisson's
// own channels and read-hold keys for the name shapes of internal/keys'
// TestRedissonNames table, seen on the server.
func TestRedissonNames(t *testing.T) {
	// MAVEN_FLAGS (make interop's) may name the local repository.
	args := append([]string{"-B", "-q", "-o"}, strings.Fields(os.Getenv("MAVEN_FLAGS"))...)
	cmd := exec.Command("mvn", append(args, "surefire:test", "-Dredis.address=redis://"+srv.Addr())...)
	cmd.Dir = "java"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("interop: JUnit suite: %v\n%s", err, out)
	}
}
