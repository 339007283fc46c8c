package redistest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server whose port another process took between freePort and the bind
// exits; launch must report that, not adopt whatever answers on the port.
// Beside a second make test another package's server took a Cluster node's
// port and the Cluster was formed with it ("... is not configured as a
// cluster node"). The squatter here answers PONG to PING and to everything
// else, as the foreign server did.
func TestLaunchRefusesAServerThatIsNotItsOwn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer l.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := conn.Write([]byte("+PONG\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()

	s := &Server{t: t, dir: t.TempDir(), port: l.Addr().(*net.TCPAddr).Port}
	err = s.launch()
	if err == nil {
		s.Kill()
	}
	require.Error(t, err, "launch adopted the process on port %d that is not its redis-server", s.port)
	assert.True(t, strings.Contains(err.Error(), "exited"), "the server could not bind: %v", err)
}
