#!/usr/bin/env bash
# The server's own CPU time per posted statistics snapshot, without and with a pseudonymisation
# key: `callstats serve` on 127.0.0.1 takes REQUESTS single-record requests (the shared Chromium
# call as `callstats import-chromium` writes it: full first snapshots, then deltas) spread over
# 160 call ids from 8 keep-alive clients (snapshot-load.py), and its utime + stime from
# /proc/PID/stat over them is divided by the snapshots. The generator runs in other processes:
# its CPU is not counted. Not a test: the figures in DECISIONS.md ("What a posted snapshot
# costs in serve") and the README's performance table.
#   Benchmarks/serve-load/snapshot-cpu.sh                    (release build, 40,000 requests, each mode)
#   REQUESTS=10000 MODES=key SERVE_ARGS="--compression-level 3" Benchmarks/serve-load/snapshot-cpu.sh
#   PERF=1 Benchmarks/serve-load/snapshot-cpu.sh             (also `perf record -g` the server: $PERF_DIR/perf-<mode>.data, /tmp by default)
# MODES: "plain key" (default), "plain" or "key". RECORDING: the Chromium recording to import.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
BIN="${BIN:-.build/release/callstats}"
REQUESTS="${REQUESTS:-40000}"
CLIENTS="${CLIENTS:-8}"
CALLS="${CALLS:-160}"
MODES="${MODES:-plain key}"
RECORDING="${RECORDING:-$root/../shared/data/chromium-call-30ms-2pct.jsonl.zst}"
[ -f "$RECORDING" ] || { echo "no recording at $RECORDING: set RECORDING to ../shared/data/chromium-call-30ms-2pct.jsonl.zst beside the repository" >&2; exit 1; }
[ -x "$BIN" ] || swift build -c release --product callstats

work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; rm -rf "$work"' EXIT
"$BIN" import-chromium "$RECORDING" --out "$work/call.ndjson" --call chromium-call >/dev/null

for mode in $MODES; do
  key_args=()
  [ "$mode" = key ] && key_args=(--pseudonymize-key 000102030405060708090a0b0c0d0e0f)
  rm -rf "$work/logs"
  # One client address sends for every call and holds every connection: the per-client call
  # limit and the bound on connections per address are lifted.
  "$BIN" serve --listen 127.0.0.1:0 --out "$work/logs" --allow-origin http://app.example \
    --max-calls-per-client 10000000 --max-connections-per-address 1000000 "${key_args[@]}" ${SERVE_ARGS:-} \
    >"$work/serve.out" 2>"$work/serve.err" &
  pid=$!
  for _ in $(seq 300); do grep -q listening "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
  port="$(grep -o '127.0.0.1:[0-9]*' "$work/serve.out" | head -1 | cut -d: -f2)"
  [ -n "$port" ] || { echo "serve did not start: $(cat "$work/serve.err")" >&2; exit 1; }
  echo "== $mode: callstats serve ${key_args[*]} ${SERVE_ARGS:-} (pid $pid, $(nproc) cores)"
  perf_pid=""
  if [ -n "${PERF:-}" ]; then
    perf record -g -o "${PERF_DIR:-/tmp}/perf-$mode.data" -p "$pid" 2>/dev/null &
    perf_pid=$!
  fi
  python3 "$here/snapshot-load.py" "$work/call.ndjson" "http://127.0.0.1:$port" "$pid" "$REQUESTS" "$CLIENTS" "$CALLS"
  [ -n "$perf_pid" ] && { kill -INT "$perf_pid"; wait "$perf_pid" || true; }
  curl -s "http://127.0.0.1:$port/metrics" | grep -E '^callstats_serve_flush_seconds_count' |
    awk -v n="$REQUESTS" '{ printf "group commits (fsyncs): %d, %.1f snapshots each\n", $2, n / $2 }' || true
  kill -TERM "$pid"
  wait "$pid" || true
  pid=""
  echo "log written: $(du -sk "$work/logs" | cut -f1) KiB"
done
