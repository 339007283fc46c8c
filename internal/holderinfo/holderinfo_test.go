package holderinfo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/holderinfo"
)

func TestEncodeParseRoundTrip(t *testing.T) {
	in := holderinfo.Info{Host: "h|x", PID: 42, Program: "cron\x1b[2K", Started: time.UnixMilli(1_700_000_000_123), Label: "a|b\"c"}
	text := holderinfo.Encode(&in)
	out := holderinfo.Parse(text)
	require.NotNil(t, out, text)
	assert.Equal(t, in.Host, out.Host)
	assert.Equal(t, in.PID, out.PID)
	assert.Equal(t, in.Program, out.Program)
	assert.Equal(t, in.Label, out.Label)
	assert.True(t, in.Started.Equal(out.Started))
}

// The stored form is a wire format other versions and other clients read:
// these bytes must not change without a new Version.
func TestEncodeIsTheStoredForm(t *testing.T) {
	in := holderinfo.Info{Host: "web-1", PID: 7, Program: "cron", Started: time.UnixMilli(1_700_000_000_123), Label: "nightly"}
	assert.Equal(t, `1|1700000000123|{"h":"web-1","p":7,"c":"cron","l":"nightly"}`, holderinfo.Encode(&in))
	assert.Equal(t, `1|0|{}`, holderinfo.Encode(&holderinfo.Info{}))
	assert.Equal(t, `{"h":"web-1","p":7,"c":"cron","l":"nightly"}`, holderinfo.Payload(&in))
}

func TestParseRefusesWhatIsNoneOfOurs(t *testing.T) {
	huge := `1|1|{"l":"` + strings.Repeat("x", 4096) + `"}`
	for _, bad := range []string{"", "2|1|{}", "1|x|{}", "1|1|not json", "1|-5|{}", "junk", huge} {
		assert.Nil(t, holderinfo.Parse(bad), bad)
	}
	got := holderinfo.Parse(`1|0|{"h":"a"}`)
	require.NotNil(t, got)
	assert.True(t, got.Started.IsZero(), "0 is an unknown start")
}
