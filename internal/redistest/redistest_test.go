package redistest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCommandStatsParsesInfo(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_ping:calls=3,usec=4,usec_per_call=1.33,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|set:calls=2,usec=9,usec_per_call=4.50,rejected_calls=0,failed_calls=0\r\n"
	assert.Equal(t, map[string]int64{"ping": 3, "config|set": 2}, CommandStats(info))
}
