package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/scripts"
)

var cgPid int

func cgTotal(t *testing.T, dir string) int64 {
	// dump and read the newest file's totals
	out, err := exec.Command("callgrind_control", "-d", strconv.Itoa(cgPid)).CombinedOutput()
	_ = out
	_ = err
	_ = out
	time.Sleep(300 * time.Millisecond)
	files, _ := filepath.Glob(dir + "/callgrind.out.*")
	var newest string
	var mt time.Time
	for _, f := range files {
		st, _ := os.Stat(f)
		if st.ModTime().After(mt) {
			mt, newest = st.ModTime(), f
		}
	}
	b, _ := os.ReadFile(newest)
	m := regexp.MustCompile(`(?m)^summary: (\d+)`).FindSubmatch(b)
	if m == nil {
		m = regexp.MustCompile(`(?m)^totals: (\d+)`).FindSubmatch(b)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	os.Remove(newest)
	return n
}

func TestZZCost(t *testing.T) {
	if os.Getenv("ZZCOST") == "" {
		t.Skip()
	}
	dir := t.TempDir()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+dir+"/callgrind.out.%p", "redis-server", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no", "--hz", "1")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cgPid = cmd.Process.Pid
	defer cmd.Process.Kill()
	var rc rueidis.Client
	for i := 0; i < 200; i++ {
		var err error
		rc, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{fmt.Sprintf("127.0.0.1:%d", port)}, DisableCache: true})
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer rc.Close()
	ctx := context.Background()
	e := New(rc, Config{})
	defer e.Close()
	n := 1000
	var targets []*RenewTarget
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("lock:%d", i)
		rc.Do(ctx, rc.B().Hset().Key(k).FieldValue().FieldValue("owner", "1").FieldValue("redisync:token", "12345").Build())
		rc.Do(ctx, rc.B().Pexpire().Key(k).Milliseconds(600000).Build())
		it := scripts.RenewItem{Key: k, Owner: "owner", Token: 12345}
		if os.Getenv("ZZINFO") != "" {
			it.Info = "redisync_holder_info:" + k
			rc.Do(ctx, rc.B().Hset().Key(it.Info).FieldValue().FieldValue("owner", "1|123|x").Build())
			rc.Do(ctx, rc.B().Pexpire().Key(it.Info).Milliseconds(600000).Build())
		}
		targets = append(targets, &RenewTarget{Item: it, LeaseMs: "600000"})
	}
	bare := rueidis.NewLuaScript("if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;")
	// warm
	RenewOn(ctx, e, scripts.LockRenew, targets)
	bareRound := func() {
		cmds := make([]rueidis.LuaExec, n)
		for i, tg := range targets {
			cmds[i] = rueidis.LuaExec{Keys: []string{tg.Item.Key}, Args: []string{"600000", "owner"}}
		}
		for _, r := range bare.ExecMulti(ctx, rc, cmds...) {
			if v, _ := r.AsInt64(); v != 1 {
				t.Fatal("bare failed", r.Error())
			}
		}
	}
	bareRound()
	ours := func() {
		for _, r := range RenewOn(ctx, e, scripts.LockRenew, targets) {
			if r.Status != 1 {
				t.Fatal("renew failed", r)
			}
		}
	}
	cgTotal(t, dir)
	measure := func(name string, f func()) float64 {
		cgTotal(t, dir)
		for i := 0; i < 2; i++ {
			f()
		}
		a := cgTotal(t, dir)
		for i := 0; i < 10; i++ {
			f()
		}
		b := cgTotal(t, dir)
		per := float64(b-a) / float64(8*n)
		t.Logf("%s: %.0f instructions per renewed hold", name, per)
		return per
	}
	// commandstats inner calls
	rc.Do(ctx, rc.B().ConfigResetstat().Build())
	ours()
	info, _ := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
	t.Log(info)
	o := measure("ours", ours)
	b := measure("bare", bareRound)
	t.Logf("ratio %.2f", o/b)
}
