#!/usr/bin/env python3
"""`callstats serve`'s peak memory while one client posts statistics it would have to hold. Not a
test: the figures in DECISIONS.md ("callstats serve"). Loopback only.

Starts the server on a free port and a temporary folder, then posts REQUESTS single-record
requests of about 250 KB (1,700 inbound-rtp objects) for one call, in one of three shapes:
  growing  one peer connection whose deltas each put 1,700 new objects (refused at 2,000)
  restart  a new peer connection every other request: a full snapshot, then a growing delta
  full     a full snapshot of a new peer connection in every request (held until the call ends)
Prints the answers by status and rejection code, and the server's peak resident size (VmHWM).

  Benchmarks/serve-load/held-objects.py [BIN [SHAPE [REQUESTS [SERVE ARGS...]]]]
  Benchmarks/serve-load/held-objects.py .build/release/callstats full 350
"""
import http.client
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter

binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/callstats"
shape = sys.argv[2] if len(sys.argv) > 2 else "full"
requests = int(sys.argv[3]) if len(sys.argv) > 3 else 350
extra = sys.argv[4:]
OBJECTS = 1_700  # one line of about 250 KB, within --max-line
T0 = 1_795_349_932_000

with tempfile.TemporaryDirectory() as folder:
    server = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--out", folder] + extra,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(re.search(r"127\.0\.0\.1:(\d+)", server.stdout.readline()).group(1))
    connection = http.client.HTTPConnection("127.0.0.1", port)

    def post(record):
        connection.request("POST", "/v1/records", json.dumps(record, separators=(",", ":")) + "\n",
                           {"Content-Type": "application/x-ndjson"})
        reply = connection.getresponse()
        body = json.loads(reply.read() or b"{}")
        codes = [r["code"] for r in body.get("rejections", [])]
        return f"{reply.status} {codes[0]}" if codes else str(reply.status)

    post({"v": 1, "kind": "call", "call": "greedy", "ts": T0, "direction": "outgoing", "media": ["audio"]})
    answers = Counter()
    next_id, pc, seq = 0, 0, 0
    for k in range(requests):
        ts = T0 + k * 1000
        objects = [{"id": f"IT{next_id + i}", "timestamp": ts, "type": "inbound-rtp", "kind": "audio",
                    "ssrc": 1000 + next_id + i, "packetsReceived": 50 * k, "packetsLost": 0, "jitter": 0.003}
                   for i in range(OBJECTS)]
        next_id += OBJECTS
        record = {"v": 1, "kind": "stats", "call": "greedy", "ts": ts, "format": "w3c"}
        if k == 0 or shape == "full" or (shape == "restart" and k % 2 == 0):
            pc, seq = pc + 1, 0
            record.update(pc=f"pc{pc}", seq=0, report=objects)
        else:
            record.update(pc=f"pc{pc}", seq=seq + 1, base=seq, delta={"put": objects})
            seq += 1
        answers[post(record)] += 1
    status = open(f"/proc/{server.pid}/status").read()
    peak = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))
    server.terminate()
    server.wait()
    print(f"{shape}, {requests} requests: {dict(answers)}; serve's peak resident size {peak / 1024:.0f} MiB")
