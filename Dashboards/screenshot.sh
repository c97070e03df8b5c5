#!/bin/sh
# Renders the report of the Data/ sample in headless Chromium and saves Dashboards/report.png
# (the picture in the README). Run from the repository root: make screenshot
set -eu
BIN=${BIN:-.build/release/callstats}
DB=${DB:-demo.sqlite}
OUT=${OUT:-Dashboards/report.png}
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROMIUM" ] || { echo "chromium is not installed (apt-get install chromium)" >&2; exit 1; }
[ -f "$DB" ] || "$BIN" analyze Data/sample --db "$DB" --quiet >/dev/null
html=$(mktemp --suffix=.html)
trap 'rm -f "$html"' EXIT
"$BIN" report --db "$DB" --out "$html"
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000 \
  --window-size=1400,2300 --screenshot="$OUT" "file://$html" 2>/dev/null
echo "screenshot  $OUT"
