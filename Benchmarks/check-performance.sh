#!/usr/bin/env bash
# Instruction counts of fixed workloads under valgrind's callgrind, held to the thresholds in
# Benchmarks/Thresholds/instructions.txt. Instructions, not seconds: the same binary on the
# same input executes the same instructions whatever else the machine is doing, so a few
# percent is a real change. What moves the counts besides this repository's code: the Swift
# compiler, the system's libzstd and libsqlite3 (Debian's packages), glibc and valgrind
# itself. After one of those changes, or a change meant to move a count, run with --update
# and commit the new thresholds with the reason in the commit message.
#
#   Benchmarks/check-performance.sh            build (release), measure, compare; exit 1 on a regression
#   Benchmarks/check-performance.sh --update   rewrite the thresholds from this run
set -euo pipefail
cd "$(dirname "$0")/.."
THRESHOLDS=Benchmarks/Thresholds/instructions.txt
WORK=/tmp/callstats-perf-check
update=false
[ "${1:-}" = "--update" ] && update=true

command -v valgrind >/dev/null || { echo "check-performance: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
# With the tests: \`make perf-check\` runs them from the same build (one release build, not two).
swift build -c release --package-path Benchmarks --build-tests >/dev/null
BENCH=$PWD/Benchmarks/.build/release/callstats-bench

# Inputs, made the same way every time (the simulator and the pcap generator are seeded).
rm -rf "$WORK" && mkdir -p "$WORK"
"$BENCH" workload corpus --calls 100 "$WORK/corpus" >/dev/null
"$BENCH" workload capture-pcap --packets 200000 --streams 100 "$WORK/g711.pcap"
"$BENCH" workload growing-chain --records 13 "$WORK/chain-13" >/dev/null
"$BENCH" workload growing-chain --records 26 "$WORK/chain-26" >/dev/null

# Runs one workload under callgrind in a fixed environment and prints its instruction count.
instructions() {
    env -i PATH=/usr/bin:/bin HOME="$WORK" LANG=C \
        valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" "$@" >/dev/null 2>"$WORK/valgrind.log" \
        || { cat "$WORK/valgrind.log" >&2; exit 1; }
    awk '/Collected :/ { print $NF }' "$WORK/valgrind.log"
}

declare -A measured
measured[scanner]=$(instructions "$BENCH" workload scanner "$WORK/corpus")
measured[analyze]=$(instructions "$BENCH" workload analyze "$WORK/corpus" --db "$WORK/analyze.sqlite")
measured[capture]=$(instructions "$BENCH" workload capture "$WORK/g711.pcap")
measured[collector-writer]=$(instructions "$BENCH" workload collector-writer "$WORK/corpus" --out "$WORK/writer.ndjson.zst" --snapshots 1000)
measured[serve-writer]=$(instructions "$BENCH" workload serve-writer "$WORK/corpus" --out "$WORK/serve.ndjson.zst" --snapshots 1000)
measured[growing-chain-13]=$(instructions "$BENCH" workload analyze "$WORK/chain-13" --db "$WORK/chain-13.sqlite")
measured[growing-chain-26]=$(instructions "$BENCH" workload analyze "$WORK/chain-26" --db "$WORK/chain-26.sqlite")
workloads="scanner analyze capture collector-writer serve-writer growing-chain-13 growing-chain-26"

if $update; then
    {
        echo "# workload  instructions  allowed regression (%) -- written by Benchmarks/check-performance.sh --update"
        for w in $workloads; do echo "$w ${measured[$w]} 3"; done
    } > "$THRESHOLDS"
    echo "thresholds written to $THRESHOLDS"
    cat "$THRESHOLDS"
    exit 0
fi

status=0
printf '%-18s %16s %16s %9s\n' workload measured threshold delta
for w in $workloads; do
    expected="" allowed=""
    read -r expected allowed < <(awk -v w="$w" '$1 == w { print $2, $3 }' "$THRESHOLDS") || true
    if [ -z "${expected:-}" ]; then echo "$w: no threshold in $THRESHOLDS (run with --update)"; status=1; continue; fi
    m=${measured[$w]}
    delta=$(awk -v m="$m" -v e="$expected" 'BEGIN { printf "%+.2f", (m - e) * 100 / e }')
    verdict=ok
    if awk -v d="$delta" -v a="$allowed" 'BEGIN { exit !(d > a) }'; then verdict="REGRESSION (more than +$allowed %)"; status=1
    elif awk -v d="$delta" -v a="$allowed" 'BEGIN { exit !(d < -a) }'; then verdict="faster: lower the threshold (--update)"; fi
    printf '%-18s %16s %16s %8s%%  %s\n' "$w" "$m" "$expected" "$delta" "$verdict"
done
# A chain twice as long must cost about twice as much (a cost growing with the square of its
# records, as before the per-chain bound, gives about 4 between these lengths).
ratio=$(awk -v a="${measured[growing-chain-26]}" -v b="${measured[growing-chain-13]}" 'BEGIN { printf "%.2f", a / b }')
if awk -v r="$ratio" 'BEGIN { exit !(r > 2.3) }'; then
    echo "growing chain: 26 records cost ${ratio}x 13 records': more than linear (at most 2.3x)"; status=1
else
    echo "growing chain: 26 records cost ${ratio}x 13 records' (linear: at most 2.3x)"
fi
exit $status
