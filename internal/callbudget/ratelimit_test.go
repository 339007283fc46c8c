package callbudget_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/callbudget"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
)

// deciders are the budget table's rows that are no lock: their "acquire"
// is one decision, measured by TestCallBudgetRateLimit.
var deciders = map[string]bool{"ratelimit": true}

// TestCallBudgetRateLimit counts one admitting decision of the rate
// limiter on an identity that has a schedule (the common case of a busy
// key: the key exists), and fails when it exceeds the "ratelimit acquire"
// row of docs/benchmarks.md.
func TestCallBudgetRateLimit(t *testing.T) {
	f, err := os.Open("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	budgets, err := callbudget.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var b *callbudget.Budget
	for i := range budgets {
		if budgets[i].Primitive == "ratelimit" && budgets[i].Op == "acquire" {
			b = &budgets[i]
		}
	}
	if b == nil {
		t.Fatal(`docs/benchmarks.md has no "ratelimit | acquire" row`)
	}
	srv := redistest.Start(t)
	m := meter{t: t, rc: srv.Client(t)}
	c := redisync.New(srv.Client(t))
	defer c.Close()
	ctx := context.Background()
	l := ratelimit.New(c, "callbudget", ratelimit.Every(time.Hour), 3)
	for range 2 { // loads the script, and leaves the key a schedule
		if _, err := l.Allow(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	m.reset()
	res, err := l.Allow(ctx, "k")
	if err != nil || res.Allowed != 1 {
		t.Fatalf("the measured decision: %+v, %v", res, err)
	}
	u := m.read()
	switch {
	case u.calls > b.Calls || u.scripts > b.Scripts:
		t.Errorf("ratelimit acquire: %v, over its budget of %d calls in %d scripts (docs/benchmarks.md, Call budget)", u, b.Calls, b.Scripts)
	case u.calls < b.Calls || u.scripts < b.Scripts:
		t.Logf("ratelimit acquire: %v, under its budget of %d calls in %d scripts: tighten the table", u, b.Calls, b.Scripts)
	default:
		t.Logf("ratelimit acquire: %v", u)
	}
}
