#!/usr/bin/env bash
# Instruction counts and peak heap of fixed workloads under valgrind, held to budgets in
# Benchmarks/Thresholds/. Instructions and heap bytes, not seconds: the same binary on the same
# input executes the same instructions and allocates the same bytes whatever else the machine
# is doing, so a few percent is a real change. What moves the figures besides this repository's
# code: the Swift compiler, the system's libzstd and libsqlite3 (Debian's packages), glibc and
# valgrind itself.
#
# Two limits per workload (instructions.txt, memory.txt):
#   - one change may add at most the row's allowed percent over its threshold (column 2);
#   - since the release the row's baseline comes from (columns 4 and 5), the figure may have
#     drifted at most 5 %, unless budget.txt names the decision: `WORKLOAD +N %: what it costs,
#     why it is worth it`. Steps of 3 % that each pass the first limit add up against the second.
#
#   Benchmarks/check-performance.sh                  build (release), measure, compare; exit 1 past a limit
#   Benchmarks/check-performance.sh --update         thresholds := this run's figures (baselines kept)
#   Benchmarks/check-performance.sh --release NAME   thresholds and baselines := this run's, from release NAME
set -euo pipefail
cd "$(dirname "$0")/.."
INSTRUCTIONS=Benchmarks/Thresholds/instructions.txt
MEMORY=Benchmarks/Thresholds/memory.txt
BUDGET=Benchmarks/Thresholds/budget.txt
DRIFT_ALLOWED=5
# A folder of its own: two checks at once (a CI run beside a local one) must not share inputs.
WORK=$(mktemp -d /tmp/callstats-perf-check.XXXXXX)
EXTRA_ENV=""
trap 'rm -rf "$WORK"' EXIT
mode=check release=""
case "${1:-}" in
    --update) mode=update ;;
    --release) mode=release; release="${2:?--release needs a name}" ;;
    "") ;;
    *) echo "usage: $0 [--update | --release NAME]" >&2; exit 64 ;;
esac

command -v valgrind >/dev/null || { echo "check-performance: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
# With the tests: `make perf-check` runs them from the same build (one release build, not two).
swift build -c release --package-path Benchmarks --build-tests >/dev/null
# Measured without its debug information: valgrind 3.19 cannot read the DWARF 5 the C targets'
# compiler writes, and the counts need only the code.
BENCH=$WORK/callstats-bench
cp Benchmarks/.build/release/callstats-bench "$BENCH"
strip --strip-debug "$BENCH"
# serve's writer workload, in a binary of its own (SwiftNIO's start-up stays out of the others).
SERVE_BENCH=$WORK/callstats-bench-serve
cp Benchmarks/.build/release/callstats-bench-serve "$SERVE_BENCH"
strip --strip-debug "$SERVE_BENCH"

# Inputs, made the same way every time (the simulator and the pcap generator are seeded).
"$BENCH" workload corpus --calls 100 "$WORK/corpus" >/dev/null
"$BENCH" workload capture-pcap --packets 200000 --streams 100 "$WORK/g711.pcap"
"$BENCH" workload growing-chain --records 13 "$WORK/chain-13" >/dev/null
"$BENCH" workload growing-chain --records 26 "$WORK/chain-26" >/dev/null
"$BENCH" workload conference --participants 12 --seconds 300 "$WORK/conference" >/dev/null

# Runs one workload under valgrind in a fixed environment (and $EXTRA_ENV, for one row).
under() {
    env -i PATH=/usr/bin:/bin HOME="$WORK" LANG=C $EXTRA_ENV valgrind "$@" >/dev/null 2>"$WORK/valgrind.log" \
        || { cat "$WORK/valgrind.log" >&2; exit 1; }
}
# Its instruction count (callgrind).
instructions() {
    under --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" "$@"
    awk '/Collected :/ { print $NF }' "$WORK/valgrind.log"
}
# Its instruction count inside the functions whose symbols match a pattern (callgrind's
# --toggle-collect): one step of a larger run.
instructions_in() {
    local pattern=$1; shift
    under --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" --collect-atstart=no --toggle-collect="$pattern" "$@"
    awk '/Collected :/ { print $NF }' "$WORK/valgrind.log"
}
# Its peak heap in bytes, requested plus allocator overhead (massif's largest snapshot).
peak_heap() {
    under --tool=massif --massif-out-file="$WORK/massif.out" "$@"
    awk -F= '/^mem_heap_B=/ { h = $2 } /^mem_heap_extra_B=/ { if (h + $2 > m) m = h + $2 } END { print m }' "$WORK/massif.out"
}

declare -A measured
measured[scanner]=$(instructions "$BENCH" workload scanner "$WORK/corpus")
measured[analyze]=$(instructions "$BENCH" workload analyze "$WORK/corpus" --db "$WORK/analyze.sqlite")
measured[capture]=$(instructions "$BENCH" workload capture "$WORK/g711.pcap")
measured[collector-writer]=$(instructions "$BENCH" workload collector-writer "$WORK/corpus" --out "$WORK/collector-logs" --snapshots 1000)
measured[serve-writer]=$(instructions "$SERVE_BENCH" "$WORK/corpus" --out "$WORK/serve-logs" --snapshots 1000)
measured[growing-chain-13]=$(instructions "$BENCH" workload analyze "$WORK/chain-13" --db "$WORK/chain-13.sqlite")
measured[growing-chain-26]=$(instructions "$BENCH" workload analyze "$WORK/chain-26" --db "$WORK/chain-26.sqlite")
# The attribution of a 12-party, 5-minute conference's streams (ConferenceAttribution.attribute,
# never inlined so that its symbol marks it), within the analysis that stores its rows. Its
# dictionaries' costs follow Swift's per-process hash seed (runs differed by 1.2 %), so it is
# counted with a fixed seed.
measured[conference-attribution]=$(EXTRA_ENV=SWIFT_DETERMINISTIC_HASHING=1 instructions_in '*ConferenceAttributionO9attribute*' \
    "$BENCH" workload analyze "$WORK/conference" --db "$WORK/conference.sqlite")
rm -f "$WORK/analyze.sqlite"
measured[analyze-peak-heap]=$(peak_heap "$BENCH" workload analyze "$WORK/corpus" --db "$WORK/analyze.sqlite" --hand-off 1)
instruction_workloads="scanner analyze capture collector-writer serve-writer growing-chain-13 growing-chain-26 conference-attribution"
memory_workloads="analyze-peak-heap"

# Rewrites a thresholds file from this run: the allowed step and the baseline are kept (a new
# row, or --release, takes this run's figure as its baseline).
rewrite() {
    local file=$1 unit=$2 workloads=$3 old
    old=$(cat "$file" 2>/dev/null || true)
    {
        echo "# workload  $unit  allowed step (%)  baseline  baseline's release -- written by Benchmarks/check-performance.sh"
        for w in $workloads; do
            local row allowed base from
            row=$(awk -v w="$w" '$1 == w { print $3, $4, $5 }' <<<"$old")
            read -r allowed base from <<<"${row:-}" || true
            if [ "$mode" = release ] || [ -z "${base:-}" ]; then base=${measured[$w]} from=${release:-$(date +%F)}; fi
            echo "$w ${measured[$w]} ${allowed:-3} $base $from"
        done
    } >"$file"
    cat "$file"
}
if [ "$mode" != check ]; then
    rewrite "$INSTRUCTIONS" instructions "$instruction_workloads"
    rewrite "$MEMORY" "peak heap bytes" "$memory_workloads"
    exit 0
fi

status=0
printf '%-18s %14s %14s %8s %14s %8s\n' workload measured threshold step baseline drift
for w in $instruction_workloads $memory_workloads; do
    file=$INSTRUCTIONS
    [[ " $memory_workloads " == *" $w "* ]] && file=$MEMORY
    expected="" allowed="" base="" from=""
    read -r expected allowed base from < <(awk -v w="$w" '$1 == w { print $2, $3, $4, $5 }' "$file") || true
    if [ -z "${expected:-}" ]; then echo "$w: no threshold in $file (run with --update)"; status=1; continue; fi
    m=${measured[$w]}
    step=$(awk -v m="$m" -v e="$expected" 'BEGIN { printf "%+.2f", (m - e) * 100 / e }')
    drift=$(awk -v m="$m" -v b="$base" 'BEGIN { printf "%+.2f", (m - b) * 100 / b }')
    # The drift this workload may have: 5 %, or what a decision in budget.txt accepted.
    decided=$(awk -v w="$w" '$1 == w && $2 ~ /^\+[0-9.]+$/ { sub(/^\+/, "", $2); print $2 }' "$BUDGET" | sort -g | tail -1)
    budget=${decided:-$DRIFT_ALLOWED}
    verdict=ok
    if awk -v d="$step" -v a="$allowed" 'BEGIN { exit !(d > a) }'; then verdict="REGRESSION (more than +$allowed % in one step)"; status=1
    elif awk -v d="$drift" -v a="$budget" 'BEGIN { exit !(d > a) }'; then
        verdict="OVER BUDGET (more than +$budget % since $from: name the decision in $BUDGET)"; status=1
    elif awk -v d="$step" -v a="$allowed" 'BEGIN { exit !(d < -a) }'; then verdict="better: lower the threshold (--update)"; fi
    printf '%-18s %14s %14s %7s%% %14s %7s%%  %s\n' "$w" "$m" "$expected" "$step" "$base" "$drift" "$verdict"
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
