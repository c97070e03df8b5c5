#!/usr/bin/env python3
"""Lays real browser statistics out as chrome://webrtc-internals dumps of several generations.

The statistics come from jitsi/rtcstats-server's test dumps (MIT, see NOTICE-jitsi-rtcstats-server):
rtcstats client streams that real browsers wrote during real calls. This script undoes their delta
compression and writes each peer connection the way the webrtc-internals page of a generation
kept it (see README.md for what each generation's layout is). Only the layout is made here: every
value, time and API trace entry is the browser's own.

    python3 build_dumps.py PATH/TO/rtcstats-server/src/test/dumps

Standard library only.
"""
import datetime
import json
import os
import sys

# (source dump, output, generation, the page's time zone offset in minutes, kept getstats per pc)
DUMPS = [
    ("google-legacy-stats-sfu", "chrome-legacy-goog-m86.txt", "legacy", -300, 30),
    ("9c93a447-c9f8-489d-87ca-21263dec0642", "chrome-type-in-id-m101.txt", "type-in-id", 60, None),
    ("chrome-relay", "chrome-standard-m117.txt", "standard", None, None),
    ("firefox97-standard-stats-sfu", "firefox-standard.txt", "other-browser", None, None),
    ("safari-relay", "safari-standard.txt", "other-browser", None, None),
]

# Cut: certificates carry no figure and are most of a short dump's text.
DROPPED_TYPES = {"certificate", "googCertificate"}

# Event handler names as the older page's trace wrote them.
OLD_NAMES = {
    "oniceconnectionstatechange": "iceConnectionStateChange",
    "onsignalingstatechange": "signalingStateChange",
    "onicegatheringstatechange": "iceGatheringStateChange",
    "onconnectionstatechange": "connectionStateChange",
    "onicecandidate": "onIceCandidate",
    "onaddstream": "onAddStream",
    "onremovestream": "onRemoveStream",
    "ontrack": "onTrack",
    "onnegotiationneeded": "onNegotiationNeeded",
    "ondatachannel": "onDataChannel",
}


def read_lines(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def iso(ms):
    t = datetime.datetime.fromtimestamp(int(ms) // 1000, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (int(ms) % 1000)


def locale_text(ms, offset_minutes, day_first):
    """What the page's `new Date().toLocaleString()` showed in a time zone of that offset."""
    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc) + datetime.timedelta(minutes=offset_minutes)
    if day_first:  # en-GB
        return t.strftime("%d/%m/%Y, %H:%M:%S")
    hour = t.hour % 12 or 12
    return "%d/%d/%d, %d:%02d:%02d %s" % (t.month, t.day, t.year, hour, t.minute, t.second, "PM" if t.hour >= 12 else "AM")


def decode_getstats(lines, pc, removal_is_sent):
    """The peer connection's reports, whole: [(line time, {id: object})]."""
    state = {}
    out = []
    for a in lines:
        if a[0] != "getstats" or a[1] != pc:
            continue
        delta = a[2]
        top = delta.get("timestamp")
        new = {} if removal_is_sent else dict(state)
        for oid, changes in delta.items():
            if oid == "timestamp":
                continue
            o = dict(state.get(oid, {}))
            o.update(changes)
            if o.get("timestamp") == 0 or "timestamp" not in o:
                o["timestamp"] = top
            new[oid] = o
        state = new
        out.append((a[-1], {k: dict(v) for k, v in state.items()}))
    return out


def page_value(v, legacy):
    # The legacy API gave every value as text; the page kept text that reads as a number as one.
    if legacy and isinstance(v, str):
        try:
            f = float(v)
            if v.strip() and f == f and abs(f) != float("inf"):
                return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f
        except ValueError:
            pass
    return v


def build(src_dir, source, output, generation, zone, keep):
    lines = read_lines(os.path.join(src_dir, source))
    header = next((a[2] for a in lines if a[0] == "connectionInfo"), None)
    if isinstance(header, str):
        header = json.loads(header)
    protocol = str((header or {}).get("clientProtocol", ""))
    # rtcstats 3 clients send an unchanged report as {"timestamp": …}: a report left out is gone.
    removal_is_sent = protocol.startswith("3")
    legacy = generation == "legacy"
    with_type = generation in ("standard", "other-browser")
    with_timestamps = generation == "standard"
    pcs = []
    for a in lines:
        if a[0] == "getstats" and a[1] not in pcs:
            pcs.append(a[1])
    dump = {"getUserMedia": [], "PeerConnections": {}}
    for a in lines:
        if a[0] == "navigator.mediaDevices.getUserMedia":
            v = a[2] or {}
            g = {"rid": 1, "pid": 1, "origin": (header or {}).get("origin", ""), "request_type": "getUserMedia",
                 "audio": json.dumps(v.get("audio", "")), "video": json.dumps(v.get("video", ""))}
            if generation == "standard":
                g["timestamp"] = a[-1]
            dump["getUserMedia"].append(g)
    for n, pc in enumerate(pcs):
        reports = decode_getstats(lines, pc, removal_is_sent)
        if keep is not None:
            reports = reports[:keep]
        cut_at = reports[-1][0] if reports else None
        series = {}  # key -> [statsType, [(time, value)]]
        for line_time, report in reports:
            for oid, o in report.items():
                if o.get("type") in DROPPED_TYPES:
                    continue
                t = line_time if legacy else o.get("timestamp") or line_time
                members = [(k, v) for k, v in o.items() if k not in ("id", "type", "timestamp")]
                if with_timestamps:
                    members.append(("timestamp", t))
                for k, v in members:
                    s = series.setdefault(oid + "-" + k, [o.get("type"), []])
                    s[1].append((t, page_value(v, legacy)))
        stats = {}
        for key, (stype, points) in series.items():
            entry = {"startTime": iso(points[0][0]), "endTime": iso(points[-1][0])}
            if with_type and stype:
                entry["statsType"] = stype
            entry["values"] = json.dumps([p[1] for p in points], separators=(",", ":"))
            stats[key] = entry
        log = []
        config, constraints = "", ""
        for a in lines:
            if a[1] != pc or a[0] == "getstats":
                continue
            if cut_at is not None and a[-1] > cut_at:
                break
            method, value, t = a[0], a[2], a[-1]
            if method == "create":
                config = json.dumps(value)
                continue
            if method == "constraints":
                constraints = json.dumps(value)
                continue
            if generation in ("legacy", "type-in-id"):
                method = OLD_NAMES.get(method, method)
                if isinstance(value, dict) and "sdp" in value and "type" in value:
                    value = "type: %s, sdp: %s" % (value["type"], value["sdp"])
            if value is None:
                text = ""
            elif isinstance(value, str):
                text = value
            else:
                text = json.dumps(value)
            e = {"type": method, "value": text}
            if generation in ("legacy", "type-in-id"):
                e["time"] = locale_text(t, zone, day_first=generation == "type-in-id")
            elif generation == "other-browser":
                e["time"] = iso(t)
            else:
                e["timestamp"] = t
            log.append(e)
        dump["PeerConnections"]["%d-%d" % (4242, n + 1)] = {
            "pid": 4242, "rtcConfiguration": config, "constraints": constraints,
            "url": (header or {}).get("url", ""), "stats": stats, "updateLog": log,
        }
    if header and header.get("userAgent"):
        dump["UserAgent"] = header["userAgent"]
    return dump


def main():
    src = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    for source, output, generation, zone, keep in DUMPS:
        dump = build(src, source, output, generation, zone, keep)
        with open(os.path.join(here, output), "w", encoding="utf-8") as f:
            json.dump(dump, f, indent=1)
            f.write("\n")
        print(output, os.path.getsize(os.path.join(here, output)))


if __name__ == "__main__":
    main()
