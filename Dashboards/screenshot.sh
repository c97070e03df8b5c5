#!/bin/sh
# Renders a report in headless Chromium and saves a picture of it. Run from the repository root.
#   sh Dashboards/screenshot.sh              Dashboards/report.png: the report of the Data/ sample
#                                            (the picture in the README; make screenshot)
#   sh Dashboards/screenshot.sh conference   Dashboards/conference.png: the conferences section of
#                                            a simulated conference of six (p1's uplink and p2's
#                                            downlink impaired), its drill-down drawn
# Each command is printed before it runs, so the picture can be made again by hand.
set -eu
MODE=${1:-report}
BIN=${BIN:-.build/release/callstats}
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROMIUM" ] || { echo "chromium is not installed (apt-get install chromium)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "+ $*" >&2; "$@"; }
case "$MODE" in
report)
  DB=${DB:-demo.sqlite}
  OUT=${OUT:-Dashboards/report.png}
  [ -f "$DB" ] || say "$BIN" analyze Data/sample --db "$DB" --quiet >/dev/null
  say "$BIN" report --db "$DB" --out "$work/report.html" >/dev/null
  url="file://$work/report.html"
  size=1400,2300
  ;;
conference)
  OUT=${OUT:-Dashboards/conference.png}
  say "$BIN" simulate --conference 6 --out "$work/conference" >/dev/null
  say "$BIN" analyze "$work/conference" --db "$work/conference.sqlite" --quiet >/dev/null
  say "$BIN" report --db "$work/conference.sqlite" --out "$work/report.html" >/dev/null
  # The fragment shows the conferences alone (with the header and time range); the window
  # is as tall as that page, so nothing is scrolled away.
  url="file://$work/report.html#conferences"
  size=1300,680
  ;;
*)
  echo "usage: $0 [report | conference]" >&2
  exit 2
  ;;
esac
say "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000 \
  --window-size=$size --screenshot="$OUT" "$url" 2>/dev/null
echo "screenshot  $OUT"
