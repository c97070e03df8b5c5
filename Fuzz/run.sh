#!/usr/bin/env bash
# Runs each fuzz target for SECONDS (default 60) and prints executions and crashes per target.
#   Fuzz/run.sh 300
# Builds first when needed (Fuzz/build.sh). Each target starts from the committed seeds in
# Fuzz/corpus/<target> plus what earlier runs found (.build-fuzz/corpus/<target>). A crash stops
# its target; the input is saved in .build-fuzz/crashes/ and should be committed to
# Fuzz/regressions/<target>/ once fixed, where FuzzReplayTests replays it on every test run.
# Exit status 1 when any target crashed, 2 when the targets did not build.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
OUT=.build-fuzz
# Build when a target is missing or any source changed since the last build.
if ! [ -x "$OUT/fuzz-capture" ] || ! [ -x "$OUT/fuzz-records" ] || ! [ -x "$OUT/fuzz-zstd" ] ||
   [ -n "$(find Sources Fuzz/targets Tests/FaultTests/FuzzEntryPoints.swift -newer "$OUT/fuzz-capture" \( -name '*.swift' -o -name '*.h' \) | head -1)" ]; then
    Fuzz/build.sh || { echo "Fuzz/run.sh: the fuzz targets did not build" >&2; exit 2; }
fi
mkdir -p "$OUT/crashes"

total_execs=0
total_crashes=0
rows=()
for target in records zstd capture; do
    mkdir -p "$OUT/corpus/$target" "Fuzz/regressions/$target"
    log="$OUT/$target.log"
    before=$(ls "$OUT/crashes" | grep -c "^$target-" || true)
    "$OUT/fuzz-$target" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -max_len=65536 \
        -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$OUT/crashes/$target-" \
        "$OUT/corpus/$target" "Fuzz/corpus/$target" "Fuzz/regressions/$target" >"$log" 2>&1
    status=$?
    # Executions: the final statistics, or the last progress line when a crash cut the run short.
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
    execs=${execs:-0}
    after=$(ls "$OUT/crashes" | grep -c "^$target-" || true)
    crashes=$((after - before))
    [ $status -ne 0 ] && [ $crashes -eq 0 ] && crashes=1  # died without an artifact: still a failure
    total_execs=$((total_execs + execs))
    total_crashes=$((total_crashes + crashes))
    rows+=("$(printf '%-10s %8s %12s %8s' "$target" "${SECONDS_PER_TARGET}s" "$execs" "$crashes")")
    [ $crashes -gt 0 ] && rows+=("           see $log and $OUT/crashes/$target-*")
done
printf '%-10s %8s %12s %8s\n' target time executions crashes
printf '%s\n' "${rows[@]}"
printf '%-10s %8s %12s %8s\n' total "" "$total_execs" "$total_crashes"
[ $total_crashes -eq 0 ]
