#!/usr/bin/env python3
"""Honest clients' results while slow headers hold `callstats serve`'s connections. Not a test:
the figures in DECISIONS.md ("callstats serve"). Loopback only, bounded in time.

500 connections from 127.0.0.1 send a request head a byte a second, never finishing it, and
reconnect whenever the server closes one; 50 clients, each from its own address (127.0.0.10 on),
post a one-record request every 0.5 s on a new connection. The server allows 400 connections.
Prints the honest requests' statuses and what the attack's connections were answered.

  Benchmarks/serve-load/slow-headers.py [BIN [SECONDS [SERVE ARGS...]]]
  Benchmarks/serve-load/slow-headers.py .build/release/callstats 40 --max-connections-per-address 400
"""
import json
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/callstats"
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 40
extra = sys.argv[3:]
ATTACKERS, HONEST = 500, 50

work = tempfile.mkdtemp()
server = subprocess.Popen(
    [binary, "serve", "--listen", "127.0.0.1:0", "--out", work + "/logs", "--max-connections", "400"] + extra,
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
port = int(re.search(r"127\.0\.0\.1:(\d+)", server.stdout.readline()).group(1))
end = time.time() + seconds
head = b"POST /v1/records HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
attack = {"opened": 0, "408": 0, "503": 0, "closed otherwise": 0}


def slow_headers():
    conns = {}

    def connect():
        try:
            s = socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.1", 0))
            s.setblocking(False)
            conns[s] = [0, b""]
            attack["opened"] += 1
        except OSError:
            pass

    for _ in range(ATTACKERS):
        connect()
    while time.time() < end:
        for s, state in list(conns.items()):
            try:
                s.send(head[state[0]:state[0] + 1] or b"a")
            except OSError:
                pass
            state[0] += 1
        tick = min(time.time() + 1, end)
        while time.time() < tick:
            readable, _, _ = select.select(list(conns), [], [], max(0.01, tick - time.time()))
            for s in readable:
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if data:
                    conns[s][1] += data
                    continue
                reply = conns.pop(s)[1]
                s.close()
                status = reply[9:12].decode() if reply.startswith(b"HTTP/1.1 ") else ""
                attack[status if status in ("408", "503") else "closed otherwise"] += 1
        for _ in range(ATTACKERS - len(conns)):
            connect()
    for s in conns:
        s.close()


results, lock = [], threading.Lock()


def honest(i):
    n = 0
    while time.time() < end - 1:
        body = json.dumps({"v": 1, "kind": "call", "call": f"h-{i}-{n}", "ts": 1795349930000, "platform": "web"}) + "\n"
        started, status = time.time(), -1
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(f"127.0.0.{10 + i}", 0))
            s.sendall(f"POST /v1/records HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                      f"Connection: close\r\n\r\n{body}".encode())
            reply = s.recv(4096)
            s.close()
            status = int(reply.split()[1]) if reply else 0
        except OSError:
            pass
        with lock:
            results.append((status, time.time() - started))
        n += 1
        time.sleep(0.5)


attacker = threading.Thread(target=slow_headers)
attacker.start()
time.sleep(1)
clients = [threading.Thread(target=honest, args=(i,)) for i in range(HONEST)]
for c in clients:
    c.start()
for c in clients:
    c.join()
attacker.join()
server.terminate()
server.wait()
statuses = {}
for status, _ in results:
    statuses[status] = statuses.get(status, 0) + 1
served = [t for status, t in results if status == 200]
print(f"honest requests {len(results)}: statuses {statuses}, slowest 200 {max(served, default=0):.3f} s")
print(f"slow-header connections: {attack}")
