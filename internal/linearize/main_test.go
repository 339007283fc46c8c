package linearize

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/redisync/redisync/internal/locktest"
)

// parallel is how many of this package's tests and kinds run at once
// unless -test.parallel says otherwise: they wait out leases and stalls on
// servers of their own, so the default (GOMAXPROCS, 2 here) would serialize
// a package whose tests mostly sleep.
const parallel = "16"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", parallel); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	locktest.Main(m)
}
