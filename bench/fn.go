package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
)

// The Functions experiment (-cost -fn, issue 24): what the server would
// save if redisync's scripts ran as a Redis Functions library — every
// helper of lib.lua, keyspace.lua and the primitives' own helper files
// defined once, when FUNCTION LOAD runs the library, and each script a
// registered function called by FCALL — instead of EVALSHA of a text that
// makes its helpers on every call. It counts, as -cost does, the rlock and
// rwlock read pairs through a redisync Client (EVALSHA, as shipped) beside
// the same script files' pairs by FCALL with the keys and arguments the
// Client sends, and the bare Redisson pair both ways; then what FUNCTION
// LOAD of the whole library costs once, in instructions and memory. Two
// more rows tell what Functions saves from what reading globals once
// saves: the rwlock read files by EVALSHA as they are, and with redis,
// KEYS and ARGV read into locals first (in a function, KEYS and ARGV are
// locals already).
//
// A script file becomes a function as written: its body is the callback,
// whose keys and args are assigned to the library's upvalues KEYS and ARGV
// (which the helpers read) and shadowed by locals of the same names (which
// the body reads). keyspace.lua's info_checked, a memo that lives for one
// EVAL, would outlive a call in a library (and answer for another ACL
// user): each callback starts it afresh when it is not empty (with next,
// kept in an upvalue at the first call: the globals a library's top level
// sees while it loads have no next, nor redis.call).

// fnScriptsDir is where the script files are, from bench/.
const fnScriptsDir = "../internal/scripts"

// fnLibs are the helper files, defined once at the library's top in this
// order (each script's prelude takes its helpers from the first two; the
// others are prepended to their primitive's scripts).
var fnLibs = []string{"lib.lua", "keyspace.lua", "rwlock_lib.lua", "fair_redisson_lib.lua", "latch_lib.lua"}

// fnLibrary is the library text: the helper files, then a function per
// script file in files, named "<library>_<file>": function names are one
// namespace across every library of a server, so two versions of the
// library, loaded side by side, must differ in their functions' names too.
//
// bare leaves out the prologue that the helpers need (the upvalues KEYS
// and ARGV, the memo's reset): enough for a common path that calls no
// helper, and the floor of what a callback costs.
func fnLibrary(name string, files []string, bare bool) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=%s\nlocal KEYS, ARGV, next_fn\n", name)
	for _, f := range fnLibs {
		src, err := os.ReadFile(filepath.Join(fnScriptsDir, f))
		if err != nil {
			return "", fmt.Errorf("%w (run from bench/)", err)
		}
		b.Write(src)
		b.WriteString("\n")
	}
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(fnScriptsDir, f))
		if err != nil {
			return "", err
		}
		body, flags := fnBody(string(src))
		prologue := "KEYS, ARGV = keys, args\nif not next_fn then next_fn = next end\n" +
			"if next_fn(info_checked) then info_checked = {} end\nlocal KEYS, ARGV = keys, args\n"
		if bare {
			prologue = "local KEYS, ARGV = keys, args\n"
		}
		fmt.Fprintf(&b, "redis.register_function{function_name='%s_%s', flags={%s}, callback=function(keys, args)\n%s%s\nend}\n",
			name, strings.TrimSuffix(f, ".lua"), flags, prologue, body)
	}
	return b.String(), nil
}

// fnBody is a script file without its shebang line, and the function flags
// that line declares. A file without one (a release, a renewal: it must run
// under out of memory) gets none here, which FCALL refuses whole over
// maxmemory: production would need allow-oom for it, or keep it on EVAL.
func fnBody(src string) (body, flags string) {
	first, rest, _ := strings.Cut(src, "\n")
	if !strings.HasPrefix(first, "#!lua") {
		return src, ""
	}
	if strings.Contains(first, "no-writes") {
		return rest, "'no-writes'"
	}
	return rest, ""
}

// fnAllScripts lists every script file: the whole library production would
// load.
func fnAllScripts() ([]string, error) {
	entries, err := os.ReadDir(fnScriptsDir)
	if err != nil {
		return nil, fmt.Errorf("%w (run from bench/)", err)
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".lua") && !strings.HasSuffix(n, "lib.lua") && n != "keyspace.lua" {
			files = append(files, n)
		}
	}
	sort.Strings(files)
	return files, nil
}

// fnLoad loads a library (FUNCTION LOAD REPLACE).
func fnLoad(ctx context.Context, rc rueidis.Client, text string) error {
	return rc.Do(ctx, rc.B().FunctionLoad().Replace().FunctionCode(text).Build()).Error()
}

// fcall runs function fn of the loaded library; readOnly goes as FCALL_RO.
func fcall(ctx context.Context, rc rueidis.Client, fn string, readOnly bool, keys, args []string) rueidis.RedisResult {
	if readOnly {
		return rc.Do(ctx, rc.B().FcallRo().Function(fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	return rc.Do(ctx, rc.B().Fcall().Function(fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
}

// fnLib is the library the pairs' cases load.
const fnLib = "redisync_fncost"

// fnOwner is an owner id of the Client's shape ("<uuid>:<handle>"), so that
// the arguments are as long as the Client's.
func fnOwner(i int) string { return "2c4e17a1-af55-4ba2-bb11-23828026c5c6:" + strconv.Itoa(i+1) }

func derived(prefix, name string) string {
	k, _ := keys.Derived(prefix, name)
	return k
}

// fnCase is a pair of two functions of a library loaded by open, with
// their keys and arguments for name i.
func fnCase(name string, files []string, bare bool, pair func(ctx context.Context, rc rueidis.Client, name, owner string) (func(context.Context) error, error)) costCase {
	return costCase{name: name, open: func(rc rueidis.Client) (func(context.Context, int) (func(context.Context) error, error), func()) {
		text, err := fnLibrary(fnLib, files, bare)
		if err == nil {
			err = fnLoad(context.Background(), rc, text)
		}
		return func(ctx context.Context, i int) (func(context.Context) error, error) {
			if err != nil {
				return nil, err
			}
			return pair(ctx, rc, costName(i), fnOwner(i))
		}, func() {}
	}}
}

// fnToken reads an acquire's common-path reply: the token, a string.
func fnToken(res rueidis.RedisResult) (string, error) {
	t, err := res.ToString()
	if err != nil {
		return "", fmt.Errorf("%w (not the common path's reply)", err)
	}
	return t, nil
}

// fnReleased checks a release's common-path reply: 0.
func fnReleased(res rueidis.RedisResult) error {
	n, err := res.AsInt64()
	if err == nil && n != 0 {
		err = errNotHeld
	}
	return err
}

// rlockFn is rlock's pair by FCALL: the keys and arguments LockAcquire and
// LockReleaseWith send for a plain hold without a holder record.
func rlockFn(ctx context.Context, rc rueidis.Client, name, owner string) (func(context.Context) error, error) {
	lock, token := name, derived(keys.LockTokenPrefix, name)
	t, err := fnToken(fcall(ctx, rc, fnLib+"_rlock_acquire", false, []string{lock, token}, []string{"30000", owner}))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return fnReleased(fcall(ctx, rc, fnLib+"_rlock_release", false,
			[]string{lock, keys.LockChannelPrefix + ":{" + name + "}", token}, []string{owner, t}))
	}, nil
}

// rwReadFn is the rwlock read pair by FCALL, with RWReadAcquire's and
// RWReadRelease's keys and arguments.
func rwReadFn(ctx context.Context, rc rueidis.Client, name, owner string) (func(context.Context) error, error) {
	base := "{" + name + "}"
	timeouts := base + ":" + owner + ":rwlock_timeout"
	token, phase := derived(keys.LockTokenPrefix, name), derived(keys.RWTokenPrefix, name)
	t, err := fnToken(fcall(ctx, rc, fnLib+"_rwlock_read_acquire", false,
		[]string{name, timeouts, token, derived(keys.RWWritersPrefix, name), phase}, []string{"30000", owner}))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return fnReleased(fcall(ctx, rc, fnLib+"_rwlock_read_release", false,
			[]string{name, keys.RWChannelPrefix + ":" + base, timeouts, base, token, phase}, []string{owner, t}))
	}, nil
}

// bareFnLibrary is the bare Redisson pair (bare.go) as a library of two
// functions, their bodies as written (KEYS and ARGV the callback's
// parameters).
func bareFnLibrary() string {
	return "#!lua name=bare_fncost\n" +
		"redis.register_function('bare_acquire', function(KEYS, ARGV)\n" + bareAcquireSrc + "\nend)\n" +
		"redis.register_function('bare_release', function(KEYS, ARGV)\n" + bareReleaseSrc + "\nend)\n"
}

func bareFnCase() costCase {
	return costCase{name: "(a) bare Redisson pair, FCALL", open: func(rc rueidis.Client) (func(context.Context, int) (func(context.Context) error, error), func()) {
		err := fnLoad(context.Background(), rc, bareFnLibrary())
		return func(ctx context.Context, i int) (func(context.Context) error, error) {
			if err != nil {
				return nil, err
			}
			k, owner := bareKeys(costName(i)), "owner:cost"
			if err := fcall(ctx, rc, "bare_acquire", false, []string{k.lock}, []string{bareLease, owner}).Error(); !rueidis.IsRedisNil(err) {
				return nil, errors.Join(errBusy, err)
			}
			return func(ctx context.Context) error {
				err := fcall(ctx, rc, "bare_release", false, []string{k.lock, k.channel}, []string{"0", bareLease, owner}).Error()
				if rueidis.IsRedisNil(err) {
					return errNotHeld
				}
				return err
			}, nil
		}, func() {}
	}}
}

func fnCases() []costCase {
	cases := costCases()
	pick := func(name string) costCase {
		for _, c := range cases {
			if c.name == name {
				return c
			}
		}
		panic("bench: no cost case " + name)
	}
	rl, rw, bare := pick("rlock"), pick("rwlock read"), pick("(a) bare Redisson pair")
	rl.name, rw.name, bare.name = "rlock, EVALSHA (Client)", "rwlock read, EVALSHA (Client)", "(a) bare Redisson pair, EVALSHA"
	return []costCase{
		bare, // the ratios' reference: first
		bareFnCase(),
		rl,
		fnCase("rlock, FCALL", []string{"rlock_acquire.lua", "rlock_release.lua"}, false, rlockFn),
		// The floor: rlock's common paths call no helper.
		fnCase("rlock, FCALL, no prologue", []string{"rlock_acquire.lua", "rlock_release.lua"}, true, rlockFn),
		rw,
		fnCase("rwlock read, FCALL", []string{"rwlock_read_acquire.lua", "rwlock_read_release.lua"}, false, rwReadFn),
		rwReadEvalCase("rwlock read, EVALSHA of the files", false),
		rwReadEvalCase("rwlock read, EVALSHA of the files, globals read once", true),
	}
}

// fnLoadCost is what one FUNCTION LOAD of the whole library costs the
// server: instructions between a callgrind zero and dump around it, and
// the memory INFO reports for functions before and after.
type fnLoadCost struct {
	scripts, bytes      int
	instructions        int64
	vmBefore, vmAfter   int64 // used_memory_vm_functions
	libBefore, libAfter int64 // used_memory_functions
	evalVM, evalCache   int64 // used_memory_vm_eval, used_memory_scripts_eval after one EVAL of each script (none loaded as functions)
}

func measureFnLoad(ctx context.Context) (fnLoadCost, error) {
	files, err := fnAllScripts()
	if err != nil {
		return fnLoadCost{}, err
	}
	text, err := fnLibrary("redisync_fnload", files, false)
	if err != nil {
		return fnLoadCost{}, err
	}
	out := fnLoadCost{scripts: len(files), bytes: len(text)}
	_, err = callgrindRun(func(rc rueidis.Client, s *callgrindServer) error {
		out.vmBefore, out.libBefore = infoInt(ctx, rc, "used_memory_vm_functions"), infoInt(ctx, rc, "used_memory_functions")
		if err := s.zero(); err != nil {
			return err
		}
		if err := fnLoad(ctx, rc, text); err != nil {
			return err
		}
		n, err := s.dump()
		out.instructions = n
		out.vmAfter, out.libAfter = infoInt(ctx, rc, "used_memory_vm_functions"), infoInt(ctx, rc, "used_memory_functions")
		return err
	})
	return out, err
}

// infoInt reads one integer field of INFO memory (-1: none).
func infoInt(ctx context.Context, rc rueidis.Client, field string) int64 {
	info, err := rc.Do(ctx, rc.B().Info().Section("memory").Build()).ToString()
	if err != nil {
		return -1
	}
	for _, line := range splitLines(info) {
		if v, ok := cut(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
}

// evalMemory is what the script cache holds after the Client's rlock and
// rwlock read pairs (four scripts), for comparison with the library.
func evalMemory(ctx context.Context) (vm, cache int64, err error) {
	_, err = callgrindRun(func(rc rueidis.Client, _ *callgrindServer) error {
		c := redisync.New(rc)
		defer c.Close()
		for _, l := range []locker{rlock.New(c, "fn:a"), rwlock.New(c, "fn:b").ReadLocker()} {
			if err := l.Lock(ctx); err != nil {
				return err
			}
			if err := l.Unlock(ctx); err != nil {
				return err
			}
		}
		vm, cache = infoInt(ctx, rc, "used_memory_vm_eval"), infoInt(ctx, rc, "used_memory_scripts_eval")
		return nil
	})
	return vm, cache, err
}

// runFnCost is -cost -fn: it prints its markdown table to stdout.
func runFnCost() error {
	if why := valgrindMissing(); why != "" {
		fmt.Println("cost -fn: skipped:", why)
		return nil
	}
	started := time.Now()
	ctx := context.Background()
	idle, err := idleRate()
	if err != nil {
		return fmt.Errorf("the idle rate (callgrind_control): %w", err)
	}
	var rows []costRow
	for _, c := range fnCases() {
		row, err := pairRow(ctx, c, idle)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	load, err := measureFnLoad(ctx)
	if err != nil {
		return fmt.Errorf("FUNCTION LOAD: %w", err)
	}
	vm, cache, err := evalMemory(ctx)
	if err != nil {
		return fmt.Errorf("script cache: %w", err)
	}
	fmt.Print(fnMarkdown(rows, load, vm, cache, idle, time.Since(started)))
	return nil
}

func fnMarkdown(rows []costRow, load fnLoadCost, evalVM, evalCache int64, idle float64, took time.Duration) string {
	var b strings.Builder
	version, _ := redisVersionOf()
	fmt.Fprintf(&b, "Measured %s, Redis %s under callgrind (`go run . -cost -fn`, %v): pairs as in `make cost` "+
		"(difference of %d and %d pairs, less %s idle instructions a second).\n\n",
		time.Now().UTC().Format("2006-01-02"), version, took.Round(time.Second), costPairs[0], costPairs[1], kilo(idle))
	a, af := rows[0].instructions, rows[1].instructions
	b.WriteString("| pair | redis-server instructions | ratio to (a) EVALSHA | ratio to (a) FCALL |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %.2f× | %.2f× |\n", r.name, kilo(r.instructions), r.instructions/a, r.instructions/af)
	}
	b.WriteString("\n| pair | script | calls per op | Redis calls per op |\n|---|---|---|---|\n")
	for _, r := range rows {
		for _, p := range r.phases {
			ops := float64(max(p.ops, 1))
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.name, p.name, trim(float64(p.u.scripts)/ops), trim(float64(p.u.calls)/ops))
		}
	}
	fmt.Fprintf(&b, "\nFUNCTION LOAD of the whole library (%d script files and the helper files, %d bytes): %s instructions once per node; "+
		"used_memory_vm_functions %d -> %d bytes, used_memory_functions %d -> %d bytes. "+
		"For comparison, after the Client's rlock and rwlock read pairs (4 scripts cached): used_memory_vm_eval %d, used_memory_scripts_eval %d bytes.\n",
		load.scripts, load.bytes, kilo(float64(load.instructions)), load.vmBefore, load.vmAfter, load.libBefore, load.libAfter, evalVM, evalCache)
	return b.String()
}

// evalFileScript is a script file sent by EVALSHA as its common path runs
// in production: the file with the helpers that path calls (defs, from
// lib.lua) before its body — what prelude.go puts above the rare paths'
// mark; the rare paths' helpers, below it, are never made on the common
// path and are left out (the rare paths are not run). locals prepends the
// line that reads the globals redis, KEYS and ARGV once, as rlock's
// scripts do.
func evalFileScript(file string, defs []string, locals bool) (*rueidis.Lua, error) {
	src, err := os.ReadFile(filepath.Join(fnScriptsDir, file))
	if err != nil {
		return nil, fmt.Errorf("%w (run from bench/)", err)
	}
	lib, err := os.ReadFile(filepath.Join(fnScriptsDir, "lib.lua"))
	if err != nil {
		return nil, err
	}
	first, body, _ := strings.Cut(string(src), "\n")
	var b strings.Builder
	if strings.HasPrefix(first, "#!lua") {
		b.WriteString(first + "\n")
	} else {
		body = string(src)
	}
	for _, d := range defs {
		start := strings.Index(string(lib), "\nlocal function "+d+"(")
		end := strings.Index(string(lib)[start+1:], "\nend\n")
		if start < 0 || end < 0 {
			return nil, fmt.Errorf("lib.lua: no helper %s", d)
		}
		b.WriteString(string(lib)[start+1 : start+1+end+5])
	}
	if locals {
		b.WriteString("local redis, KEYS, ARGV = redis, KEYS, ARGV\n")
	}
	b.WriteString(body)
	return rueidis.NewLuaScript(b.String()), nil
}

// rwReadEvalCase is the rwlock read pair by EVALSHA of its files (see
// evalFileScript), with rwReadFn's keys and arguments.
func rwReadEvalCase(name string, locals bool) costCase {
	return costCase{name: name, open: func(rc rueidis.Client) (func(context.Context, int) (func(context.Context) error, error), func()) {
		acquire, err := evalFileScript("rwlock_read_acquire.lua", nil, locals)
		var release *rueidis.Lua
		if err == nil {
			release, err = evalFileScript("rwlock_read_release.lua", []string{"keep_last"}, locals)
		}
		return func(ctx context.Context, i int) (func(context.Context) error, error) {
			if err != nil {
				return nil, err
			}
			n, owner := costName(i), fnOwner(i)
			base := "{" + n + "}"
			timeouts := base + ":" + owner + ":rwlock_timeout"
			token, phase := derived(keys.LockTokenPrefix, n), derived(keys.RWTokenPrefix, n)
			t, err := fnToken(acquire.Exec(ctx, rc, []string{n, timeouts, token, derived(keys.RWWritersPrefix, n), phase}, []string{"30000", owner}))
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) error {
				return fnReleased(release.Exec(ctx, rc, []string{n, keys.RWChannelPrefix + ":" + base, timeouts, base, token, phase}, []string{owner, t}))
			}, nil
		}, func() {}
	}}
}
