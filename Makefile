# Tests run against real redis-server processes (internal/redistest).
.PHONY: test torture teeth demo bench compare compare-quick cost watchdog redis-server interop

# The root module but the fault harness's tier (make torture), and the
# redisyncotel module (its own go.mod, so the core keeps no OpenTelemetry
# dependency), both at once. testprogress prints each package as it
# finishes (plain go test holds a package's line back until every package
# listed before it is done), the output of failing tests, the slowest tests
# and the wall time. The packages mostly wait on servers and leases (at -p 2
# the tests kept a quarter of the two cores busy), so more run at once than
# there are cores: TESTFLAGS' -p and -parallel, measured in docs/testing.md.
# go test starts packages in the order listed: the longest go first, so that
# none of them starts last and sets the wall time alone.
TESTFLAGS ?= -race -count=1 -p 4 -parallel 4
SLOWFIRST = . ./internal/deploytest ./cmd/redisync ./rlock ./redlock ./internal/lifecycle ./internal/outside ./internal/keyspace ./semaphore
test: redis-server
	go vet ./...
	cd redisyncotel && go vet ./...
	go run ./internal/testprogress -slow 5 -- $(TESTFLAGS) $(SLOWFIRST) $$(go list ./... | grep -v '/internal/torture$$') \
		:: -C redisyncotel $(TESTFLAGS) ./...

# The fault harness's CI tier: every primitive under its scenarios, a few
# seconds each (about four minutes here). CI runs it before make test.
torture: redis-server
	go test -race -count=1 ./internal/torture

# The regression tests' teeth: every mutant of internal/teeth/mutants, one
# at a time, must make its test fail (docs/testing.md#teeth). CI runs a
# share of them per commit (.ci/run).
teeth: redis-server
	go run ./internal/teeth

# The interop suite (interop/, issue 16): redisync against Redisson 4.x (Java
# 17, Maven) and node-redisson (npm) on a real redis-server. It installs
# nothing but the two clients' own dependencies (Maven's local repository,
# node_modules from package-lock.json), and says what to install when a tool
# is missing (.ci/run installs them on CI). MAVEN_FLAGS can add, say,
# -o or -Dmaven.repo.local=DIR.
MAVEN_FLAGS ?=
interop: redis-server
	@for tool in java mvn node npm; do command -v $$tool >/dev/null 2>&1 || { \
		echo "interop: $$tool is missing (Debian: apt-get install -y openjdk-17-jdk-headless maven nodejs npm)"; exit 1; }; done
	cd interop/java && mvn -B -q --no-transfer-progress $(MAVEN_FLAGS) package
	cd interop/node && npm ci --prefer-offline --no-audit --no-fund --loglevel=error
	go vet -tags interop ./interop/
	MAVEN_FLAGS="$(MAVEN_FLAGS)" go test -race -count=1 -tags interop ./interop/

demo:
	go run ./cmd/redisync demo

bench: redis-server
	go test -run '^$$' -bench . -benchmem . ./rlock ./semaphore ./multilock

# The side-by-side benchmark against the peers (bench/ module): the full run
# rewrites bench/results.json, bench/results.md and bench/chart.svg.
compare: redis-server
	cd bench && go run . -out . > results.md

# Its one-minute subset, as CI runs it (output to a temporary directory).
compare-quick: redis-server
	cd bench && go run . -quick -out "$$(mktemp -d)" > /dev/null

# The server cost of each operation (bench/ module, a few minutes): redis-server
# instructions per acquire+release and per renewed hold under valgrind's
# callgrind, against the bare Redisson-style script pair and a bare renewal,
# with INFO commandstats per script; prints the markdown tables of
# docs/benchmarks.md's "Server cost". Without valgrind it says so and skips.
# ONLY="rwlock,semaphore" counts those primitives alone (the reference rows
# always run).
ONLY ?=
cost: redis-server
	cd bench && go run . -cost -only "$(ONLY)"

# Scenario 5 alone at a chosen size (bench/ module): N holds on one Client
# with a LEASE, watched for WINDOW once taken; reports lost holds, client and
# server CPU, scripts/s, heap per hold and GC. PROFILE=dir writes the
# client's cpu.pprof and allocs.pprof over the window.
N ?= 100000
LEASE ?= 3s
WINDOW ?= 60s
watchdog: redis-server
	cd bench && go run . -watchdog $(N):$(LEASE):$(WINDOW) -wdprofile "$(PROFILE)"

# Installs Debian's redis-server and redis-tools (redis-cli forms the test
# Cluster) when missing (needs root, as on CI).
redis-server:
	@{ command -v redis-server && command -v redis-cli; } >/dev/null 2>&1 || { \
		if [ "$$(id -u)" -ne 0 ]; then echo "redis-server or redis-cli is missing: run 'sudo apt-get install -y redis-server redis-tools'"; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; }
	@redis-server --version
