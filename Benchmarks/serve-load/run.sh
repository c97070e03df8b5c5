#!/usr/bin/env bash
# Load on `callstats serve` from wrk on 127.0.0.1: 200 connections each posting one delta-encoded
# snapshot every 5 s, then as fast as the server answers. Prints accepted snapshots/s, p50/p99
# latency and the server's peak memory (VmHWM). Not a test: the figures in the README's performance table.
#   Benchmarks/serve-load/run.sh              (release build, 20 s paced + 20 s flat out)
#   PACED_SECONDS=60 FLAT_SECONDS=60 CONNECTIONS=200 SERVE_ARGS="--writers 4" Benchmarks/serve-load/run.sh
#   PACE_MS=20 Benchmarks/serve-load/run.sh  (the paced stage at 10,000 snapshots/s)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
BIN="${BIN:-.build/release/callstats}"
CONNECTIONS="${CONNECTIONS:-200}"
THREADS="${THREADS:-1}"
PACED_SECONDS="${PACED_SECONDS:-20}"
FLAT_SECONDS="${FLAT_SECONDS:-20}"
# The paced stage's interval per connection: 5000 is a snapshot per call every 5 s; 20 with 200
# connections offers 10,000 snapshots/s, the rate the latency target is stated at.
PACE_MS="${PACE_MS:-5000}"
[ -x "$BIN" ] || swift build -c release --product callstats
command -v wrk >/dev/null || { echo "installing wrk"; apt-get install -y -qq wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }; }

work="$(mktemp -d)"
trap 'kill -TERM "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
# One client address sends for every call and holds every connection here, so the per-client
# call limit and the bound on connections per address are lifted.
"$BIN" serve --listen 127.0.0.1:0 --out "$work/logs" --max-calls-per-client 100000000 \
  --max-connections-per-address 1000000 ${SERVE_ARGS:-} > "$work/serve.out" 2>"$work/serve.err" &
pid=$!
for _ in $(seq 100); do grep -q listening "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
port="$(grep -o '127.0.0.1:[0-9]*' "$work/serve.out" | head -1 | cut -d: -f2)"
url="http://127.0.0.1:$port"
echo "callstats serve pid $pid on $url ($(nproc) cores, wrk: $THREADS threads, $CONNECTIONS connections)"

echo; echo "== paced: each connection posts a snapshot every ${PACE_MS} ms, ${PACED_SECONDS} s"
CALLSTATS_RUN="paced-$$" CALLSTATS_PACE_MS="$PACE_MS" wrk -t"$THREADS" -c"$CONNECTIONS" -d"${PACED_SECONDS}s" --timeout 10s \
  -s "$here/post.lua" "$url" | grep -v -E '^(Running|  [0-9]+ threads|Requests/sec|Transfer/sec|  Thread Stats|    Latency|    Req/Sec|  Latency Distribution|     [0-9]+%|  [0-9]+ requests in)'
echo "server memory after paced: $(grep VmHWM /proc/$pid/status)"

echo; echo "== flat out: as fast as the server answers, ${FLAT_SECONDS} s"
CALLSTATS_RUN="flat-$$" CALLSTATS_PACE_MS=0 wrk -t"$THREADS" -c"$CONNECTIONS" -d"${FLAT_SECONDS}s" --timeout 10s \
  -s "$here/post.lua" "$url" | grep -v -E '^(Running|  [0-9]+ threads|Requests/sec|Transfer/sec|  Thread Stats|    Latency|    Req/Sec|  Latency Distribution|     [0-9]+%|  [0-9]+ requests in)'
echo "server peak memory: $(grep VmHWM /proc/$pid/status)"

metrics="$(curl -s "$url/metrics")"
echo; echo "server counters:"
echo "$metrics" | grep -E '^callstats_serve_(records_total|requests_total|flush_seconds_(sum|count)|files_opened_total)'
kill -TERM "$pid"; wait "$pid" || true
echo "log written: $(du -sh "$work/logs" | cut -f1)"
