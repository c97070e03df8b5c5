#!/usr/bin/env python3
"""A month of calls at scale, measured, and what a million calls a day needs.

Simulates a month of calls (by default 240,000: over 10 million interval rows), analyses it into
SQLite and into PostgreSQL (a throwaway server: initdb into a temporary folder, a free port on
127.0.0.1, fsync on), then measures at that size:

  - the cost per call of analysing (the worker's CPU, and the PostgreSQL server's),
  - `callstats prune` of the oldest week (PostgreSQL: dropped day partitions; beside it the
    same rows removed by DELETE on a copy of the database; SQLite: call by call),
  - every Grafana panel's query, both dashboards, over Grafana's default range (the last 7
    days) and over the whole month, and `callstats report`,

and prints, from those measured costs (and `serve`'s CPU per snapshot, measured by
Benchmarks/serve-load/snapshot-cpu.sh when it is there), the machines one million and ten
million calls a day need. Not a test: the figures in the README's performance and scaling
sections.

  python3 Benchmarks/scale/month.py                      (release build; about 25 minutes)
  CALLS=40000 python3 Benchmarks/scale/month.py          (a smaller month, for a quick look)

The simulated logs are kept in bench-data/month-CALLS (made once); the databases are removed.
"""

import glob
import json
import os
import re
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("BIN", os.path.join(ROOT, ".build/release/callstats"))
CALLS = int(os.environ.get("CALLS", "240000"))
DAYS = 30
DAY_MS = 86_400_000
TICKS = os.sysconf("SC_CLK_TCK")

# The arithmetic's assumptions, printed with its answers.
PEAK_FACTOR = 3.0  # the busiest hour carries this many times an average hour's calls
TARGET_UTILISATION = 0.7  # of each core, at that peak
CORES_PER_SERVER = 32  # one PostgreSQL machine's cores before Citus spreads calls by call_id
DISK_PER_SERVER = 4e12  # bytes one PostgreSQL machine keeps (the retention period's rows)
RETENTION_DAYS = 30


def log(*args):
    print(*args, flush=True)


def run(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def timed(args):
    """Wall seconds and the child's CPU seconds of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.stdout


class Postgres:
    """A throwaway server, stopped and removed at the end."""

    def __init__(self):
        pgbins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
        if not pgbins:
            sys.exit("PostgreSQL's server is not installed (apt-get install postgresql)")
        self.bin = pgbins[-1]
        self.dir = tempfile.mkdtemp(prefix="callstats-month-pg-")
        self.as_user = []
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        data = os.path.join(self.dir, "data")
        run(self.as_user + [f"{self.bin}/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"])
        run(self.as_user + [f"{self.bin}/pg_ctl", "-D", data, "-l", os.path.join(self.dir, "log"), "-w",
                            "-o", f"-p {self.port} -k {self.dir} -h 127.0.0.1", "start"])
        self.data = data
        with open(os.path.join(data, "postmaster.pid")) as f:
            self.postmaster = int(f.readline())

    def url(self, db):
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def psql(self, db, sql):
        return run(["psql", self.url(db), "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql]).stdout.strip()

    def cpu(self):
        """CPU seconds of the server: the postmaster, the backends it reaped, and the processes
        still running (the WAL writer, checkpointer and autovacuum do part of every write's work)."""
        time.sleep(0.3)
        with open(f"/proc/{self.postmaster}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total = sum(int(x) for x in fields[11:15])
        with open(f"/proc/{self.postmaster}/task/{self.postmaster}/children") as f:
            for pid in f.read().split():
                try:
                    with open(f"/proc/{pid}/stat") as g:
                        total += sum(int(x) for x in g.read().rsplit(")", 1)[1].split()[11:13])
                except OSError:
                    pass
        return total / TICKS

    def stop(self):
        subprocess.run(self.as_user + [f"{self.bin}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def dashboard_queries(path):
    d = json.load(open(path))
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                sql = t.get("rawSql") or t.get("rawQueryText") or ""
                if sql:
                    out.append((p.get("title", "?"), sql))
            walk(p.get("panels", []))

    walk(d.get("panels", []))
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            sql = q if isinstance(q, str) else (q.get("rawSql") or q.get("rawQueryText") or "")
            out.append(("variable " + v["name"], sql))
    return out


def fill(sql, start, end, variables):
    s = sql.replace("$__from", str(start)).replace("$__to", str(end))
    for name in sorted(variables, key=len, reverse=True):
        s = s.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    return s


def time_sqlite(path, queries, start, end, variables):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    times = []
    for title, sql in queries:
        q = fill(sql, start, end, variables)
        runs = []
        for _ in range(3):
            t = time.monotonic()
            db.execute(q).fetchall()
            runs.append(time.monotonic() - t)
        times.append((statistics.median(runs), title))
    return times


def time_postgres(pg, db, queries, start, end, variables):
    times = []
    for title, sql in queries:
        q = fill(sql, start, end, variables)
        script = "\\timing on\n" + "\n".join([q.rstrip().rstrip(";") + ";"] * 3) + "\n"
        out = subprocess.run(["psql", pg.url(db), "-qAt", "-v", "ON_ERROR_STOP=1"], input=script, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"PostgreSQL panel {title!r} failed: {out.stderr.strip()}")
        runs = [float(m) / 1000 for m in re.findall(r"^Time: ([0-9.]+) ms", out.stdout, re.M)]
        times.append((statistics.median(runs), title))
    return times


def first_value(rows):
    return rows[0] if rows else "none"


def main():
    if not os.access(BIN, os.X_OK):
        log("building callstats (release)")
        run(["swift", "build", "-c", "release", "--product", "callstats"], cwd=ROOT)
    corpus = os.path.join(ROOT, "bench-data", f"month-{CALLS}")
    if not glob.glob(os.path.join(corpus, "*.ndjson.zst")):
        log(f"simulating {CALLS} calls over {DAYS} days into {corpus} (made once)")
        run([BIN, "simulate", "--calls", str(CALLS), "--days", str(DAYS), "--seed", "30", "--files", str(max(2, CALLS // 4000)),
             "--start", "2026-10-01", "--out", corpus])
    snapshots = None
    work = tempfile.mkdtemp(prefix="callstats-month-")
    pg = Postgres()
    try:
        results = {}
        # Loading: one worker each, so that its CPU is one worker's per-call cost.
        sqlite_db = os.path.join(work, "month.sqlite")
        wall, cpu, _ = timed([BIN, "analyze", corpus, "--db", sqlite_db, "--quiet"])
        results["sqlite_load"] = (wall, cpu)
        pg.psql("postgres", "CREATE DATABASE month")
        server_before = pg.cpu()
        wall, cpu, _ = timed([BIN, "analyze", corpus, "--db", pg.url("month"), "--quiet"])
        server = pg.cpu() - server_before
        results["pg_load"] = (wall, cpu, server)
        intervals = int(pg.psql("month", "SELECT count(*) FROM interval_rows"))
        calls = int(pg.psql("month", "SELECT count(*) FROM calls"))
        pg_bytes = int(pg.psql("month", "SELECT pg_database_size('month')"))
        sqlite_bytes = os.path.getsize(sqlite_db)
        # Records a call: what an agent posts to `serve`, one a request.
        records = int(sqlite3.connect(sqlite_db).execute("SELECT coalesce(sum(records), 0) FROM ingested_files").fetchone()[0])
        snapshots = records / max(calls, 1)
        first_day = int(pg.psql("month", f"SELECT min(start_ts) / {DAY_MS} FROM calls"))
        last_ts = int(pg.psql("month", "SELECT max(start_ts) FROM calls"))
        log(f"month: {calls:,} calls, {intervals:,} interval rows, {snapshots:.1f} records a call; "
            f"PostgreSQL {pg_bytes / 1e9:.2f} GB, SQLite {sqlite_bytes / 1e9:.2f} GB")
        log(f"analyse into SQLite: {results['sqlite_load'][0]:.1f} s wall, {results['sqlite_load'][1]:.1f} s CPU")
        log(f"analyse into PostgreSQL: {wall:.1f} s wall, {cpu:.1f} s worker CPU, {server:.1f} s server CPU")
        log(f"  per 1,000 calls: worker {cpu / calls * 1000:.3f} CPU s, server {server / calls * 1000:.3f} CPU s; "
            f"SQLite {results['sqlite_load'][1] / calls * 1000:.3f} CPU s")

        # Grafana and the report at this size: Grafana's default range (the last 7 days) and the month.
        worst = []
        for store, dashboard in (("SQLite", "Dashboards/grafana/callstats.json"), ("PostgreSQL", "Dashboards/grafana-postgres/callstats.json")):
            queries = dashboard_queries(os.path.join(ROOT, dashboard))
            for label, start in (("last 7 days", last_ts - 7 * DAY_MS), ("the month", first_day * DAY_MS)):
                end = last_ts + 1
                call_q = fill("SELECT call_id FROM calls WHERE grade IN ('poor', 'no_media') AND start_ts >= $__from "
                              "AND start_ts < $__to ORDER BY call_id LIMIT 1", start, end, {})
                if store == "SQLite":
                    call = first_value([r[0] for r in sqlite3.connect(sqlite_db).execute(call_q)])
                    variables = {"dimension": "all", "value": "*", "call_id": call, "conference_id": "none"}
                    times = time_sqlite(sqlite_db, queries, start, end, variables)
                else:
                    call = first_value(pg.psql("month", call_q).split("\n"))
                    variables = {"dimension": "all", "value": "*", "call_id": call, "conference_id": "none"}
                    times = time_postgres(pg, "month", queries, start, end, variables)
                times.sort(reverse=True)
                worst.append((store, label, times[0]))
                log(f"Grafana, {store}, {label}: {len(times)} queries, slowest {times[0][0] * 1000:.0f} ms ({times[0][1]}), "
                    f"then {times[1][0] * 1000:.0f} ms ({times[1][1]}), median {statistics.median(t for t, _ in times) * 1000:.0f} ms")
        for store, db in (("SQLite", sqlite_db), ("PostgreSQL", pg.url("month"))):
            wall, _, _ = timed([BIN, "report", "--db", db, "--out", os.path.join(work, "report.html")])
            log(f"report, {store}: {wall:.2f} s")

        # Prune of the oldest week.
        cutoff = (first_day + 7) * DAY_MS
        before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cutoff / 1000))
        pg.psql("postgres", "CREATE DATABASE month_delete TEMPLATE month")
        wall, _, out = timed([BIN, "prune", "--db", pg.url("month"), "--before", before, "--json"])
        removed = json.loads(out)
        log(f"prune of the oldest week, PostgreSQL: {wall:.2f} s ({removed['calls']:,} calls, {removed['intervals']:,} interval rows)")
        delete = f"""
            BEGIN;
            CREATE TEMP TABLE gone ON COMMIT DROP AS SELECT call_id, call_key FROM calls WHERE start_ts < {cutoff};
            DELETE FROM interval_rows WHERE call_key IN (SELECT call_key FROM gone);
            DELETE FROM event_rows WHERE call_key IN (SELECT call_key FROM gone);
            DELETE FROM streams WHERE call_id IN (SELECT call_id FROM gone);
            DELETE FROM findings WHERE call_id IN (SELECT call_id FROM gone);
            DELETE FROM peer_connections WHERE call_id IN (SELECT call_id FROM gone);
            DELETE FROM call_material WHERE call_id IN (SELECT call_id FROM gone);
            DELETE FROM calls WHERE call_id IN (SELECT call_id FROM gone);
            COMMIT;"""
        start = time.monotonic()
        subprocess.run(["psql", pg.url("month_delete"), "-qAt", "-v", "ON_ERROR_STOP=1"], input=delete, capture_output=True, check=True, text=True)
        log(f"  the same rows by DELETE (set by set, without the rollups): {time.monotonic() - start:.2f} s")
        wall, _, _ = timed([BIN, "prune", "--db", sqlite_db, "--before", before, "--json"])
        log(f"prune of the oldest week, SQLite: {wall:.2f} s")

        # What a million and ten million calls a day need, from the costs measured above.
        serve_us = None
        script = os.path.join(ROOT, "Benchmarks/serve-load/snapshot-cpu.sh")
        if os.path.exists(script) and os.environ.get("SERVE_US") is None:
            out = subprocess.run(["bash", script], capture_output=True, text=True, cwd=ROOT).stdout
            found = re.findall(r"= ([0-9.]+) us per snapshot", out)
            serve_us = float(found[0]) if found else None
        if os.environ.get("SERVE_US"):
            serve_us = float(os.environ["SERVE_US"])
        worker_per_call = results["pg_load"][1] / calls
        server_per_call = results["pg_load"][2] / calls
        bytes_per_call = pg_bytes / calls
        log("")
        log(f"capacity, sized for a peak hour of {PEAK_FACTOR:g}x the average at {TARGET_UTILISATION:.0%} of each core:")
        for per_day in (1_000_000, 10_000_000):
            peak_calls_per_s = per_day / 86_400 * PEAK_FACTOR

            def cores(cpu_per_call):
                return peak_calls_per_s * cpu_per_call / TARGET_UTILISATION

            line = f"  {per_day:>10,} calls/day: analyser workers {cores(worker_per_call):.2f} cores, PostgreSQL {cores(server_per_call):.2f} cores"
            if serve_us is not None:
                line += f", serve {cores(serve_us * 1e-6 * snapshots):.2f} cores ({snapshots:.0f} snapshots a call at {serve_us:.0f} µs)"
            stored = per_day * RETENTION_DAYS * bytes_per_call
            line += f"; {stored / 1e12:.1f} TB for {RETENTION_DAYS} days"
            log(line)
        citus_cores = CORES_PER_SERVER * TARGET_UTILISATION / (server_per_call * PEAK_FACTOR / 86_400)
        citus_disk = DISK_PER_SERVER / (bytes_per_call * RETENTION_DAYS)
        log(f"  one PostgreSQL server holds up to {min(citus_cores, citus_disk):,.0f} calls/day "
            f"({citus_cores:,.0f} by {CORES_PER_SERVER} cores, {citus_disk:,.0f} by {DISK_PER_SERVER / 1e12:g} TB of "
            f"{RETENTION_DAYS} days' rows); past that, Citus distributing by call_id")
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
