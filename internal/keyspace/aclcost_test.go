package keyspace

import (
	"testing"

	"github.com/redis/rueidis"
)

// BenchmarkACLCheckCmd measures what redis.acl_check_cmd costs inside a
// script, per call: each EVAL makes perEval checks of one write command on
// one key (or, for the baseline, the same loop with nothing in it), so
// (ns/op of "check" - ns/op of "baseline") / perEval is one check. Run as
// the default user (all commands) and as a user with a key pattern and a
// denied command, whose checks walk the ACL rules.
func BenchmarkACLCheckCmd(b *testing.B) {
	const perEval = 1000
	e := newEnv(b)
	e.do(b, "ACL", "SETUSER", "bench-acl", "on", ">pw", "~lock*", "~redisync_*", "&*", "+@all", "-flushall")
	b.Cleanup(func() { e.do(b, "ACL", "DELUSER", "bench-acl") })
	limited, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: "bench-acl", Password: "pw",
		DisableCache: true, ForceSingleClient: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(limited.Close)
	baseline := rueidis.NewLuaScript(`for i = 1, tonumber(ARGV[1]) do local _ = KEYS[1] end return 0`)
	check := rueidis.NewLuaScript(`local ok = 0
for i = 1, tonumber(ARGV[1]) do
  if redis.acl_check_cmd('zadd', KEYS[1], '0', 'm') then ok = ok + 1 end
end
return ok`)
	for _, user := range []struct {
		name string
		rc   rueidis.Client
	}{{"default", e.rc}, {"limited", limited}} {
		for _, s := range []struct {
			name   string
			script *rueidis.Lua
		}{{"baseline", baseline}, {"check", check}} {
			b.Run(user.name+"/"+s.name, func(b *testing.B) {
				for b.Loop() {
					if err := s.script.Exec(bg(), user.rc, []string{"lock:1"}, []string{"1000"}).Error(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/perEval, "ns/iteration")
			})
		}
	}
}
