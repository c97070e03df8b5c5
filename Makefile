# callstats: `make demo` analyses the sample logs in Data/ and shows the result;
# `make test` runs the tests. Both install missing system libraries first (Debian).

SWIFT   ?= swift
DB      ?= demo.sqlite
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BIN     := .build/release/callstats

.PHONY: all deps test-deps build demo report screenshot test collector-without-zstd perf-check soak fuzz bench format format-check clean

all: build

# System libraries the package links (zstd, zlib, libpcap, SQLite) plus tools the tests
# compare against (tshark, zstd). Installed only when missing. Not libpq: callstats opens it
# (libpq5) at run time for a PostgreSQL URL only, and needs no headers of it to build.
deps:
	@missing=""; \
	for h in zstd.h zlib.h pcap/pcap.h sqlite3.h; do [ -f /usr/include/$$h ] || missing="$$missing $$h"; done; \
	for c in pkg-config zstd; do command -v $$c >/dev/null || missing="$$missing $$c"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing system packages (missing:$$missing)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libzstd-dev zlib1g-dev libpcap-dev libsqlite3-dev pkg-config zstd >/dev/null; \
	fi

# Optional comparison tools for the tests: without them those comparisons are skipped.
test-deps: deps
	@[ -f /usr/include/zlib.h ] || { echo "Installing zlib1g-dev (callstats serve reads gzip request bodies)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq zlib1g-dev >/dev/null; }
	@command -v tshark >/dev/null || { echo "Installing tshark (packet statistics are compared with it)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq tshark >/dev/null; } || true
	@command -v valgrind >/dev/null || { echo "Installing valgrind (instruction counts of the performance checks)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind >/dev/null; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "Installing postgresql and libpq5 (the PostgreSQL store is tested against a throwaway server)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql libpq5 >/dev/null; }
	@command -v sqlite3 >/dev/null || { DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq sqlite3 >/dev/null; } || true
	@command -v openssl >/dev/null || { echo "Installing openssl (the HTTPS tests of callstats serve make their own CA)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq openssl >/dev/null; }
	@/usr/bin/python3 -c 'import prometheus_client.parser' 2>/dev/null || { echo "Installing python3-prometheus-client (/metrics is read by the Prometheus project's own parser)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-prometheus-client >/dev/null; }
	@command -v chromium >/dev/null || { echo "Installing chromium (the HTML report is checked in a headless browser)"; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; } || true

build: deps
	$(SWIFT) build -c release --product callstats

demo: build
	@rm -f $(DB) $(DB)-journal $(DB)-wal $(DB)-shm $(DB).lock
	$(BIN) analyze Data/sample --db $(DB)
	@echo
	$(BIN) query --db $(DB) "SELECT * FROM poor_share_by_network"
	@echo
	$(BIN) query --db $(DB) "SELECT started, network, platform, mos_worst, loss_pct, jitter_ms, rtt_ms, grade_reason FROM worst_calls WHERE grade = 'poor' LIMIT 8"
	@echo
	$(BIN) query --db $(DB) "SELECT code, severity, calls, mean_seconds FROM findings_summary WHERE severity != 'info'"

# The HTML report of the demo database.
report: demo
	$(BIN) report --db $(DB) --out report.html

# Dashboards/report.png, the README's picture of the report, and Dashboards/conference.png,
# a simulated conference's drill-down (needs chromium).
screenshot: build
	@rm -f $(DB) $(DB)-journal $(DB)-wal $(DB)-shm $(DB).lock
	BIN=$(BIN) DB=$(DB) sh Dashboards/screenshot.sh
	BIN=$(BIN) sh Dashboards/screenshot.sh conference

test: test-deps format-check
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	$(MAKE) collector-without-zstd
	$(MAKE) perf-check

# The collector as an iOS app links it: CallLog built without zstd (gzip logs), in a build
# folder of its own.
collector-without-zstd:
	$(SWIFT) build --target Collector -Xswiftc -DCALLSTATS_WITHOUT_ZSTD --scratch-path .build-without-zstd

# The benchmarks package's own tests, then instruction counts of fixed workloads against
# Benchmarks/Thresholds/instructions.txt (a regression of more than 3 % fails).
perf-check:
	Benchmarks/check-performance.sh
	$(SWIFT) test -c release --package-path Benchmarks --skip-build

# The fault tests at soak size (kills, damaged input, hostile values, the privacy leak test, the
# readers' memory bounds, a reader during a database's creation), then every fuzz target for
# FUZZ_SECONDS, then the figures.
SOAK_KILLS         ?= 500
SOAK_ANALYZE_KILLS ?= 100
SOAK_CONCURRENT    ?= 20
SOAK_BLANK_MB      ?= 1024
FUZZ_SECONDS       ?= 300
soak: test-deps
	$(SWIFT) build --build-tests
	CALLSTATS_SOAK_KILLS=$(SOAK_KILLS) CALLSTATS_SOAK_ANALYZE_KILLS=$(SOAK_ANALYZE_KILLS) \
	  CALLSTATS_SOAK_CONCURRENT=$(SOAK_CONCURRENT) CALLSTATS_SOAK_BLANK_MB=$(SOAK_BLANK_MB) $(SWIFT) test --skip-build --filter FaultTests > .build/soak.log 2>&1 \
	  || { grep -E "error|failed" .build/soak.log; exit 1; }
	bash Fuzz/run.sh $(FUZZ_SECONDS) | tee .build/fuzz.log
	@echo; echo "soak figures"; \
	awk '/^fault-figure/ { sum[$$2] += $$3 } END { for (k in sum) printf "  %-28s %12d\n", k, sum[k] }' .build/soak.log | sort; \
	awk '$$1 == "total" { printf "  %-28s %12d\n  %-28s %12d\n", "fuzz_executions", $$2, "fuzz_crashes", $$3 }' .build/fuzz.log

# Only the fuzzers (libFuzzer targets in Fuzz/), FUZZ_SECONDS each.
fuzz:
	bash Fuzz/run.sh $(FUZZ_SECONDS)

# The benchmarks (Benchmarks/, a package of its own): analysis next to zstd -d and DuckDB on the
# simulated corpus, and on the real-shaped one when the shared recording is beside the repo.
BENCH := Benchmarks/.build/release/callstats-bench
bench: deps
	$(SWIFT) build -c release --package-path Benchmarks
	$(BENCH) analyze
	@if [ -f ../shared/data/chromium-call-30ms-2pct.jsonl.zst ]; then \
	  $(BENCH) analyze --recording ../shared/data/chromium-call-30ms-2pct.jsonl.zst; fi

# The toolchain's `swift format`, configured by .swift-format: `format` rewrites the sources in
# place, `format-check` only reports (and fails on) what `format` would change or flag.
format:
	$(SWIFT) format --in-place --recursive Sources Tests Benchmarks/Sources Benchmarks/Tests

format-check:
	$(SWIFT) format lint --strict --recursive Sources Tests Benchmarks/Sources Benchmarks/Tests

clean:
	rm -rf .build .build-fuzz Benchmarks/.build $(DB) $(DB)-journal $(DB)-wal $(DB)-shm $(DB).lock report.html
