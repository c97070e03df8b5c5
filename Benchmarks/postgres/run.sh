#!/usr/bin/env bash
# `callstats analyze` into PostgreSQL next to SQLite: one SQLite run, then 1, 2 and 4 workers
# into one PostgreSQL database over disjoint halves and quarters of the files. Prints wall time,
# rows/s, MB/s of NDJSON, and where the CPU went (the workers, the server). A throwaway server
# (initdb into a temporary folder, a free port on 127.0.0.1, fsync on as a real server runs) is
# started and removed. Not a test: the figures in the README's "Scaling out" section.
#   Benchmarks/postgres/run.sh                 (release build, 4,000 simulated calls in 8 files)
#   CALLS=8000 Benchmarks/postgres/run.sh
#   WORKER_ARGS="--threads 1" Benchmarks/postgres/run.sh   (each worker on one reading thread)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
BIN="${BIN:-$root/.build/release/callstats}"
CALLS="${CALLS:-4000}"
[ -x "$BIN" ] || swift build -c release --product callstats
pgbin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -n "$pgbin" ] || { echo "PostgreSQL's server is not installed (apt-get install postgresql)"; exit 1; }

corpus="$root/bench-data/pg-corpus-$CALLS"
if [ ! -d "$corpus" ]; then
  echo "simulating $CALLS calls into $corpus"
  "$BIN" simulate --calls "$CALLS" --files 8 --seed 7 --full-snapshots --out "$corpus" >/dev/null
fi
mapfile -t files < <(ls "$corpus"/*.ndjson.zst | sort)
mb="$(cat "${files[@]}" | zstd -dc | wc -c | awk '{printf "%.1f", $1 / 1e6}')"
cat "${files[@]}" > /dev/null  # into the page cache

work="$(mktemp -d)"
as=()
if [ "$(id -u)" = 0 ]; then chown -R postgres "$work"; as=(runuser -u postgres --); fi
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"${as[@]}" "$pgbin/initdb" -D "$work/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
"${as[@]}" "$pgbin/pg_ctl" -D "$work/data" -l "$work/log" -w -o "-p $port -k $work -h 127.0.0.1" start >/dev/null
trap '"${as[@]}" "$pgbin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
postmaster="$(head -1 "$work/data/postmaster.pid")"
url="postgresql://postgres@127.0.0.1:$port"
psql() { command psql "$url/$1" -qAt -v ON_ERROR_STOP=1 -c "$2"; }

ticks="$(getconf CLK_TCK)"
# CPU seconds of the server: the postmaster, every backend it has reaped, and its processes
# still running (the WAL writer, checkpointer and autovacuum do part of every write's work).
server_cpu() {
  sleep 0.3  # backends of finished workers exit and are reaped
  { awk '{print $14 + $15 + $16 + $17}' "/proc/$postmaster/stat"
    for c in $(cat "/proc/$postmaster/task/$postmaster/children"); do awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || true; done
  } | awk -v t="$ticks" '{s += $1} END {print s / t}'
}
rows_sql="SELECT (SELECT count(*) FROM calls) + (SELECT count(*) FROM streams) + (SELECT count(*) FROM interval_rows)
  + (SELECT count(*) FROM event_rows) + (SELECT count(*) FROM findings)"

echo "corpus: ${#files[@]} files, $CALLS calls, $mb MB of NDJSON; $(nproc) cores"
printf '%-34s %8s %10s %8s %14s %14s\n' "run" "wall s" "rows/s" "MB/s" "workers CPU s" "server CPU s"

# $1: label, $2: db (path or URL), $3: worker count. The files are dealt round-robin.
run() {
  local label="$1" db="$2" n="$3" i pids=() start end before after
  before="$(server_cpu)"
  local cpu_file="$work/cpu-$n"
  start="$(date +%s.%N)"
  for ((i = 0; i < n; i++)); do
    local share=()
    for ((j = i; j < ${#files[@]}; j += n)); do share+=("${files[$j]}"); done
    ( /usr/bin/time -f "%U %S" -o "$cpu_file.$i" "$BIN" analyze "${share[@]}" --db "$db" --quiet ${WORKER_ARGS:-} >/dev/null ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  end="$(date +%s.%N)"
  after="$(server_cpu)"
  local wall worker_cpu rows
  wall="$(echo "$end - $start" | bc -l)"
  worker_cpu="$(cat "$cpu_file".* | awk '{s += $1 + $2} END {printf "%.1f", s}')"
  if [[ "$db" == postgresql://* ]]; then rows="$(psql "${db##*/}" "$rows_sql")"
  else rows="$(sqlite3 "$db" "$rows_sql")"; fi
  local server="-"
  [[ "$db" == postgresql://* ]] && server="$(echo "$after - $before" | bc -l | awk '{printf "%.1f", $1}')"
  printf '%-34s %8.2f %10.0f %8.1f %14s %14s\n' "$label" "$wall" "$(echo "$rows / $wall" | bc -l)" \
    "$(echo "$mb / $wall" | bc -l)" "$worker_cpu" "$server"
  echo "$wall" > "$work/wall-$label"
}

run "SQLite, 1 worker" "$work/calls.sqlite" 1
for n in 1 2 4; do
  psql postgres "CREATE DATABASE w$n"
  run "PostgreSQL, $n worker$([ $n = 1 ] || echo s)" "$url/w$n" "$n"
done
sqlite_wall="$(cat "$work/wall-SQLite, 1 worker")"
one="$(cat "$work/wall-PostgreSQL, 1 worker")"; two="$(cat "$work/wall-PostgreSQL, 2 workers")"
echo
echo "PostgreSQL, 1 worker: $(echo "$sqlite_wall / $one" | bc -l | awk '{printf "%.2f", $1}')x the SQLite path's throughput (target at least 0.70x)"
echo "PostgreSQL, 2 workers: $(echo "$one / $two" | bc -l | awk '{printf "%.2f", $1}')x one worker's throughput (target at least 1.50x)"
echo "database size for $CALLS calls: $(psql postgres "SELECT pg_size_pretty(pg_database_size('w1'))") in PostgreSQL, $(du -h "$work/calls.sqlite" | cut -f1) in SQLite"
