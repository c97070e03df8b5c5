#!/usr/bin/env python3
"""Posts real statistics snapshots to a running `callstats serve`, one record per request as the
browser agent sends them, and prints the server's own CPU time per snapshot. Not a test: the
figures in DECISIONS.md ("What a posted snapshot costs in serve"). Started by snapshot-cpu.sh.

  snapshot-load.py RECORDS.ndjson URL SERVER_PID [REQUESTS [CLIENTS [CALLS [WARMUP]]]]

RECORDS.ndjson is a call in the log format (`callstats import-chromium … --out X.ndjson`): its
`stats` records, full first snapshots then deltas with seq/base, are posted in file order under
CALLS call ids (a call's records always from the same client, so each delta follows its base),
from CLIENTS processes each holding one keep-alive connection. A call that has posted the
whole recording starts again under a new id. The request is the agent's (agent.js, `send`):
POST /v1/records, Content-Type application/x-ndjson, a fresh Callstats-Batch id, an Origin (a
browser sends one with every cross-origin fetch), the record as one line ending in a newline.

WARMUP requests per client go first under other call ids and are not counted. Then the
server's utime + stime (/proc/PID/stat, every thread; the generator runs in other processes
and is not in it) is read before the first measured request and after the last reply.
Every reply must be 200 with nothing rejected, or the figures are not printed.
"""
import http.client
import json
import multiprocessing
import os
import sys
import time
import urllib.parse

ORIGIN = "http://app.example"


def stats_lines(path):
    """The recording's statistics records as (before, after) the call id's text."""
    out = []
    with open(path, "rb") as f:
        for raw in f:
            raw = raw.rstrip(b"\n")
            if not raw:
                continue
            record = json.loads(raw)
            if record.get("kind") != "stats":
                continue
            # The line's own bytes are kept (numbers exactly as the writer wrote them); only the
            # call id, a JSON string, is replaced where it stands.
            needle = b'"call":' + json.dumps(record["call"]).encode()
            assert raw.count(needle) == 1, "call id must appear once in a stats line"
            before, after = raw.split(needle)
            out.append((before + b'"call":"', b'"' + after + b"\n"))
    return out


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))


def bodies(templates, run, client, clients, calls, count):
    """`count` request bodies of one client: its calls in turn, each through the recording."""
    mine = [c for c in range(calls) if c % clients == client]
    position = {c: 0 for c in mine}
    generation = {c: 0 for c in mine}
    out = []
    for k in range(count):
        c = mine[k % len(mine)]
        if position[c] == len(templates):
            position[c] = 0
            generation[c] += 1
        call = f"{run}-{c}-g{generation[c]}".encode()
        before, after = templates[position[c]]
        out.append(before + call + after)
        position[c] += 1
    return out


def client_main(host, port, warm, measured, start, done, results, index):
    connection = http.client.HTTPConnection(host, port)
    batch = 0
    bad = 0
    first_bad = ""

    def post(body):
        nonlocal batch, bad, first_bad
        batch += 1
        connection.request("POST", "/v1/records", body, {
            "Content-Type": "application/x-ndjson",
            "Callstats-Batch": "b-%08x%08x" % (os.getpid(), batch),
            "Origin": ORIGIN,
        })
        reply = connection.getresponse()
        text = reply.read()
        if reply.status != 200 or b'"rejected":0' not in text:
            bad += 1
            if not first_bad:
                first_bad = f"{reply.status} {text[:300]!r}"

    for body in warm:
        post(body)
    start.wait()
    for body in measured:
        post(body)
    results.put((index, bad, first_bad))
    done.wait()
    connection.close()


def main():
    records, url, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    requests = int(sys.argv[4]) if len(sys.argv) > 4 else 40_000
    clients = int(sys.argv[5]) if len(sys.argv) > 5 else 8
    calls = int(sys.argv[6]) if len(sys.argv) > 6 else 160
    warmup = int(sys.argv[7]) if len(sys.argv) > 7 else 250
    parsed = urllib.parse.urlparse(url)
    templates = stats_lines(records)
    full = sum(1 for t in templates if b'"report":' in t[1])
    sizes = sorted(len(t[0]) + len(t[1]) for t in templates if b'"delta":' in t[1])
    print(f"recording: {len(templates)} snapshots per call ({full} full, {len(templates) - full} deltas, "
          f"median delta {sizes[len(sizes) // 2] if sizes else 0} bytes)")

    run = "r%d" % os.getpid()
    per_client = requests // clients
    start = multiprocessing.Barrier(clients + 1)
    done = multiprocessing.Barrier(clients + 1)
    results = multiprocessing.Queue()
    processes = []
    for i in range(clients):
        warm = bodies(templates, run + "w", i, clients, calls, warmup)
        measured = bodies(templates, run, i, clients, calls, per_client)
        p = multiprocessing.Process(target=client_main,
                                    args=(parsed.hostname, parsed.port, warm, measured, start, done, results, i))
        p.start()
        processes.append(p)
    start.wait()
    u0, s0 = cpu_ticks(pid)
    t0 = time.monotonic()
    outcomes = [results.get() for _ in processes]
    elapsed = time.monotonic() - t0
    u1, s1 = cpu_ticks(pid)
    done.wait()
    for p in processes:
        p.join()
    bad = sum(o[1] for o in outcomes)
    if bad:
        print(f"FAILED: {bad} replies not 200 with every line taken; first: "
              + next(o[2] for o in outcomes if o[2]))
        sys.exit(1)
    n = per_client * clients
    hz = os.sysconf("SC_CLK_TCK")
    user = (u1 - u0) / hz
    system = (s1 - s0) / hz
    print(f"{n} snapshots from {clients} clients over {calls} calls in {elapsed:.1f} s ({n / elapsed:.0f} /s)")
    print(f"server CPU: user {user:.2f} s + system {system:.2f} s = {(user + system) * 1e6 / n:.1f} us per snapshot "
          f"(user {user * 1e6 / n:.1f}, system {system * 1e6 / n:.1f})")


if __name__ == "__main__":
    main()
