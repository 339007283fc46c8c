package outside_test

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// goTimeout bounds one go command of the user (a cold build cache compiles
// rueidis and OpenTelemetry: a minute on a loaded machine).
const goTimeout = 4 * time.Minute

// user is a throw-away module outside the repository, with the go
// environment of someone who fetches the published modules.
type user struct {
	dir string
	env []string
}

// newUser writes the proxy and an empty user module, each in a temporary
// directory. Its go commands see no workspace and no replace, and need no
// network when the machine's module cache holds the third-party modules. Its
// own module cache is temporary, so the versions the proxy serves never reach
// the machine's.
func newUser(t *testing.T) (*user, []module) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a module outside the repository (-short)")
	}
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	_, mods := repoModules(t)
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	writeProxy(t, proxy, mods)

	out, err := exec.Command("go", "env", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	goenv := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(goenv) != 2 {
		t.Fatalf("go env GOMODCACHE GOPROXY: %q", out)
	}
	// The repository's proxy first, then the machine's module cache (what
	// the repository's own builds downloaded), then the machine's GOPROXY
	// for anything the cache lacks (on a fresh machine, the test runs
	// before redisyncotel's dependencies were ever fetched).
	goproxy := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(goenv[0], "cache", "download"))
	if p := strings.TrimSpace(goenv[1]); p != "" && p != "off" {
		goproxy += "," + p
	}
	u := &user{dir: filepath.Join(tmp, "user")}
	u.env = append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=mod -trimpath", // -trimpath: the build cache serves the next run despite the new module cache
		"GOPROXY="+goproxy,
		// The repository's versions are the test's own (no checksum
		// database knows them), and with a fresh module cache every
		// third-party module would be looked up in the database online.
		"GOSUMDB=off",
		"GONOSUMDB=", "GONOPROXY=", "GOPRIVATE=", "GOINSECURE=",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOTOOLCHAIN=local",
	)
	// The module cache is read-only: go clean removes it (before TempDir's
	// cleanup, which was registered first).
	t.Cleanup(func() { _, _ = u.goOutput("clean", "-modcache") })
	if err := os.MkdirAll(u.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u.write(t, "go.mod", "module example.com/user\n\ngo 1.25.0\n")
	return u, mods
}

func (u *user) write(t *testing.T, name, content string) {
	t.Helper()
	p := filepath.Join(u.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (u *user) goOutput(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), goTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = u.dir, u.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// gocmd runs a go command in the user module and fails the test if it fails.
func (u *user) gocmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := u.goOutput(args...)
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// The program a user writes first: a lock, run under Do, with the
// OpenTelemetry observer (a no-op meter provider: the OpenTelemetry SDK
// would double the first build's time, and redisyncotel's own tests check
// the metrics), against a server from the test kit.
const program = `package main

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/redisyncotel"
	"github.com/redisync/redisync/redisynctest"
	"github.com/redisync/redisync/rlock"
)

func main() {
	srv, err := redisynctest.StartServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	obs, err := redisyncotel.New(noop.NewMeterProvider())
	if err != nil {
		panic(err)
	}
	c := redisync.New(rc, redisync.WithObserver(obs))
	defer c.Close()

	ctx := context.Background()
	mu := rlock.New(c, "outside:job")
	err = redisync.Do(ctx, mu, func(ctx context.Context) error {
		fmt.Println("held, token issued:", mu.Token() > 0)
		return nil
	})
	fmt.Println("do:", err)
}
`

// exampleFunc matches the declaration of an Example function.
var exampleFunc = regexp.MustCompile(`(?m)^func (Example\w*)\(\)`)

// A user's module requires redisync and redisyncotel at the first tag, as
// `go get` fetches them from a module proxy (no replace, no workspace), and
// builds and runs a program using both; and every Example of the repository,
// copied into that module as it stands, passes go vet and runs against a
// real server with its // Output: (go test checks it).
func TestOutsideUserModule(t *testing.T) {
	u, mods := newUser(t)
	for _, m := range mods {
		data, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^\s*replace\b`).Match(data) {
			t.Errorf("%s/go.mod has a replace: users never get it (go.work is for local development)", m.path)
		}
	}
	u.write(t, "main.go", program)
	// The user asks for redisyncotel alone: redisync comes at the version
	// redisyncotel requires, which must exist (a go get of both at v0.1.0
	// would overrule a requirement on a version that does not).
	otel := mods[1].path
	u.gocmd(t, "get", otel+"@"+version)
	if got := strings.TrimSpace(u.gocmd(t, "list", "-m", mods[0].path)); got != mods[0].path+" "+version {
		t.Errorf("go get %s@%s selected %q, want %s %s", otel, version, got, mods[0].path, version)
	}
	// No go mod tidy: it would want the test dependencies of rueidis and
	// OpenTelemetry, which no build needs and the module cache may lack.
	// -mod=mod lets each command add the requirements it needs, as it would
	// for a user.

	// Each published module that requires another lists every module its
	// packages and tests build with, at the versions its requirements select
	// (go.mod files of go 1.17 and later must): otherwise, once the modules
	// are tagged, a GOWORK=off build of it asks for go.mod updates. A
	// requirement the root module gains (golang.org/x/sync, say) is easy to
	// miss, as the workspace hides it.
	t.Run("go.mod lists every module", func(t *testing.T) {
		for _, m := range mods[1:] {
			dir := filepath.Join(t.TempDir(), path.Base(m.path))
			for _, f := range moduleFiles(t, m.dir) {
				data, err := os.ReadFile(filepath.Join(m.dir, filepath.FromSlash(f)))
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			mod := &user{dir: dir, env: u.env}
			before, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
			mod.gocmd(t, "list", "-deps", "-test", "./...") // -mod=mod: adds what is missing
			after, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
			if added, dropped := lineDiff(string(before), string(after)); len(added)+len(dropped) > 0 {
				t.Errorf("%s/go.mod is incomplete against %s %s: the go command added %q and dropped %q",
					m.path, mods[0].path, version, added, dropped)
			}
		}
	})

	t.Run("program", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "user")
		u.gocmd(t, "build", "-o", bin, ".")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin).CombinedOutput()
		if err != nil {
			t.Fatalf("the user's program: %v\n%s", err, out)
		}
		want := "held, token issued: true\ndo: <nil>\n"
		if string(out) != want {
			t.Errorf("the user's program printed\n%s\nwant\n%s", out, want)
		}
	})

	t.Run("examples", func(t *testing.T) {
		var examples []string // names, for the count
		for _, m := range mods {
			for _, f := range moduleFiles(t, m.dir) {
				if !strings.HasSuffix(f, "_test.go") || slices.Contains(strings.Split(f, "/"), "internal") {
					continue // not a test, or not importable from outside
				}
				data, err := os.ReadFile(filepath.Join(m.dir, filepath.FromSlash(f)))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(path.Base(f), "example") {
					// Examples live in example*_test.go files, which need
					// nothing from the other test files: they are what
					// this test copies.
					if exampleFunc.Match(data) {
						t.Errorf("%s/%s declares an Example: move it to an example_test.go", m.path, f)
					}
					continue
				}
				for _, match := range exampleFunc.FindAllStringSubmatch(string(data), -1) {
					examples = append(examples, path.Join(m.path, path.Dir(f))+"."+match[1])
				}
				// One directory per package: the file keeps its package
				// clause (<pkg>_test), the package it tests is imported.
				u.write(t, path.Join("examples", escapePath(path.Join(m.path, path.Dir(f))), path.Base(f)), string(data))
			}
		}
		if len(examples) == 0 {
			t.Fatal("found no Example")
		}
		u.gocmd(t, "vet", "./examples/...")
		out := u.gocmd(t, "test", "-count=1", "-v", "-run", "^Example", "./examples/...")
		// An Example without // Output: compiles but never runs: each must
		// have passed.
		passed := strings.Count(out, "--- PASS: Example")
		if passed != len(examples) {
			t.Errorf("%d Examples ran and passed, want all %d: %s\n%s", passed, len(examples), strings.Join(examples, ", "), out)
		}
		t.Logf("%d Examples compiled, vetted and ran outside the repository: %s", passed, strings.Join(examples, ", "))
	})
}

// lineDiff returns the lines of b that a lacks and those of a that b lacks,
// trimmed.
func lineDiff(a, b string) (added, dropped []string) {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[strings.TrimSpace(l)]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[strings.TrimSpace(l)]--
	}
	for l, n := range count {
		switch {
		case n < 0:
			added = append(added, l)
		case n > 0:
			dropped = append(dropped, l)
		}
	}
	sort.Strings(added)
	sort.Strings(dropped)
	return added, dropped
}
