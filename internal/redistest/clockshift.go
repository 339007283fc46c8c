package redistest

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Clock shifting (issue 17). Debian's libfaketime hangs Debian's
// redis-server at start (jemalloc and faketime's clock_gettime clash), so a
// shifted server runs with a tiny LD_PRELOAD shim of our own instead, built
// by the test with the machine's C compiler. The shim adds an offset to the
// wall clock — clock_gettime(CLOCK_REALTIME and CLOCK_REALTIME_COARSE),
// gettimeofday and time, which is what redis-server 7.0 reads for TIME, key
// expiry and everything else in server time — and leaves the monotonic
// clocks alone. The offset lives in an 8-byte file (int64 nanoseconds, little
// endian) that the shim maps shared, so a write to the file steps the clock
// of the running server at once.

// clockShiftEnv names the offset file in the server's environment.
const clockShiftEnv = "REDISTEST_CLOCKSHIFT_FILE"

const clockShiftSrc = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_ns;
static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_gettimeofday)(struct timeval *, void *);

__attribute__((constructor)) static void shim_init(void) {
	real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
	real_gettimeofday = dlsym(RTLD_NEXT, "gettimeofday");
	const char *path = getenv("` + clockShiftEnv + `");
	if (!path) return;
	int fd = open(path, O_RDONLY);
	if (fd < 0) return;
	void *p = mmap(0, 8, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED) offset_ns = p;
}

static int64_t shift(void) { return offset_ns ? *offset_ns : 0; }

static void add(struct timespec *ts, int64_t ns) {
	int64_t t = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + ns;
	ts->tv_sec = t / 1000000000;
	ts->tv_nsec = t % 1000000000;
	if (ts->tv_nsec < 0) { ts->tv_nsec += 1000000000; ts->tv_sec--; }
}

// Before the constructor ran (the loader and the allocator read the clock
// early), or should dlsym fail, the clock comes from the system call.
static int base_clock_gettime(clockid_t id, struct timespec *ts) {
	if (real_clock_gettime) return real_clock_gettime(id, ts);
	return syscall(SYS_clock_gettime, id, ts);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = base_clock_gettime(id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) add(ts, shift());
	return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
	int r = real_gettimeofday ? real_gettimeofday(tv, tz) : syscall(SYS_gettimeofday, tv, tz);
	if (r == 0 && tv) {
		struct timespec ts = { tv->tv_sec, (long)tv->tv_usec * 1000 };
		add(&ts, shift());
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return r;
}

time_t time(time_t *out) {
	struct timespec ts;
	base_clock_gettime(CLOCK_REALTIME, &ts);
	add(&ts, shift());
	if (out) *out = ts.tv_sec;
	return ts.tv_sec;
}
`

// Clock is the wall-clock offset of a server started by StartShifted.
type Clock struct {
	t    testing.TB
	path string
}

// Set sets the server's clock to real time plus offset, at once.
func (c *Clock) Set(offset time.Duration) {
	c.t.Helper()
	f, err := os.OpenFile(c.path, os.O_WRONLY, 0)
	if err != nil {
		c.t.Fatalf("redistest: clock offset: %v", err)
	}
	defer f.Close()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(offset.Nanoseconds()))
	// One aligned 8-byte write in place (never a truncation, which would
	// make the server's mapping fault).
	if _, err := f.WriteAt(b[:], 0); err != nil {
		c.t.Fatalf("redistest: clock offset: %v", err)
	}
}

// Offset returns the server's current offset.
func (c *Clock) Offset() time.Duration {
	c.t.Helper()
	b, err := os.ReadFile(c.path)
	if err != nil || len(b) != 8 {
		c.t.Fatalf("redistest: clock offset: %v (%d bytes)", err, len(b))
	}
	return time.Duration(int64(binary.LittleEndian.Uint64(b)))
}

// Step moves the server's clock by d (negative: back).
func (c *Clock) Step(d time.Duration) { c.Set(c.Offset() + d) }

// StartShifted starts one server whose wall clock runs offset from real
// time, changeable later through the returned Clock; extra are further
// redis-server arguments (for example "--replicaof", host, port). It skips
// the test when no C compiler is found (the shim is built with gcc or cc).
func StartShifted(t testing.TB, offset time.Duration, extra ...string) (*Server, *Clock) {
	t.Helper()
	shim := buildShim(t)
	clock := &Clock{t: t, path: filepath.Join(t.TempDir(), "offset")}
	if err := os.WriteFile(clock.path, make([]byte, 8), 0o600); err != nil {
		t.Fatalf("redistest: clock offset file: %v", err)
	}
	clock.Set(offset)
	s := startWith(t, 1, func(_ int, s *Server) {
		s.extra = extra
		s.env = []string{"LD_PRELOAD=" + shim, clockShiftEnv + "=" + clock.path}
	})[0]
	return s, clock
}

// buildShim compiles the shim into the test's temp dir and returns its path.
func buildShim(t testing.TB) string {
	t.Helper()
	cc := ""
	for _, name := range []string{"gcc", "cc"} {
		if p, err := exec.LookPath(name); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("redistest: no C compiler (gcc or cc) on PATH to build the clock-shift shim: install gcc to run clock-step tests")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "clockshift.c")
	if err := os.WriteFile(src, []byte(clockShiftSrc), 0o600); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	out := filepath.Join(dir, "clockshift.so")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", out, src, "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("redistest: build the clock-shift shim: %v: %s", err, b)
	}
	return out
}
