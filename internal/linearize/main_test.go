package linearize

import (
	"testing"

	"github.com/redisync/redisync/internal/locktest"
)

func TestMain(m *testing.M) { locktest.Main(m) }
