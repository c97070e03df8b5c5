#!/usr/bin/env bash
# `callstats analyze` of this tree beside an earlier release, on one corpus, in one sitting:
# the two binaries' runs alternate (so the machine's drifting load weighs on both alike), and
# the medians of CPU time (user + system), wall time and peak resident size are printed.
#
#   Benchmarks/compare-release.sh REV [CORPUS] [RUNS]
#     REV     the release to compare with (a commit or tag; built once into /tmp)
#     CORPUS  log folder (default: `callstats simulate --calls 3000 --seed 7`, made once)
#     RUNS    runs of each binary (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: $0 REV [CORPUS] [RUNS]}
runs=${3:-5}
work=/tmp/callstats-compare-release
mkdir -p "$work"
old_tree="$work/tree-$(git rev-parse --short "$rev")"
if [ ! -x "$old_tree/.build/release/callstats" ]; then
    [ -d "$old_tree" ] || git worktree add --detach "$old_tree" "$rev" >/dev/null
    (cd "$old_tree" && swift build -c release --product callstats >/dev/null)
fi
swift build -c release --product callstats >/dev/null
new=$PWD/.build/release/callstats old=$old_tree/.build/release/callstats
corpus=${2:-$work/simulated-3000}
if [ -z "${2:-}" ] && [ ! -d "$corpus" ]; then "$new" simulate --calls 3000 --seed 7 --out "$corpus" >/dev/null; fi

declare -A cpu wall rss
for i in $(seq "$runs"); do
    for which in old new; do
        bin=${!which}
        rm -f "$work/$which.sqlite"*
        /usr/bin/time -f "%U %S %e %M" -o "$work/time" "$bin" analyze "$corpus" --db "$work/$which.sqlite" --quiet >/dev/null 2>&1
        read -r user sys elapsed kb <"$work/time"
        cpu[$which]+="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') "
        wall[$which]+="$elapsed "
        rss[$which]+="$kb "
    done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf '%-10s %12s %12s %14s\n' "" "CPU (s)" "wall (s)" "peak (MiB)"
for which in old new; do
    printf '%-10s %12s %12s %14s\n' "$([ $which = old ] && echo "$rev" || echo this)" \
        "$(median <<<"${cpu[$which]}")" "$(median <<<"${wall[$which]}")" \
        "$(awk -v k="$(median <<<"${rss[$which]}")" 'BEGIN { printf "%.1f", k / 1024 }')"
done
awk -v a="$(median <<<"${cpu[new]}")" -v b="$(median <<<"${cpu[old]}")" -v c="$(median <<<"${rss[new]}")" -v d="$(median <<<"${rss[old]}")" \
    'BEGIN { printf "this / %s: CPU %.3fx, peak %.2fx\n", "'"$rev"'", a / b, c / d }'
