#!/usr/bin/env python3
"""An independent reader of chrome://webrtc-internals dumps: what each stream's counters say.

Reads each dump with plain `json` (standard library only) and prints, per peer connection, the
time span of its statistics and, per RTP stream (direction, kind, SSRC), the counters' last
values: packets received or sent, packets lost (for a sent stream, as the far end reported them),
bytes, and the round-trip time (the mean of the values sampled, leaving out samples taken
before the first measurement). Shares no code and no rule with the Swift importer.

    python3 oracle.py DUMP...        # JSON on standard output, keyed by file name
"""
import datetime
import json
import os
import sys

# W3C types as the ids of Chrome M80–M106 name them, for dumps without `statsType`.
ID_PREFIXES = [
    ("RTCInboundRTPAudioStream_", "inbound-rtp"), ("RTCInboundRTPVideoStream_", "inbound-rtp"),
    ("RTCOutboundRTPAudioStream_", "outbound-rtp"), ("RTCOutboundRTPVideoStream_", "outbound-rtp"),
    ("RTCRemoteInboundRtpAudioStream_", "remote-inbound-rtp"), ("RTCRemoteInboundRtpVideoStream_", "remote-inbound-rtp"),
    ("RTCRemoteOutboundRTPAudioStream_", "remote-outbound-rtp"), ("RTCRemoteOutboundRTPVideoStream_", "remote-outbound-rtp"),
]


def epoch_ms(text):
    t = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return round(t.timestamp() * 1000)


def objects_of(stats):
    """{id: {"type": …, "members": {name: [values]}, "start": ms, "end": ms, "times": [ms] or None}}"""
    objs = {}
    for key, s in stats.items():
        if "-[" in key:
            continue  # a series the page computed
        oid, _, member = key.rpartition("-")
        o = objs.setdefault(oid, {"type": None, "members": {}, "start": None, "end": None, "times": None})
        if s.get("statsType"):
            o["type"] = s["statsType"]
        values = json.loads(s["values"])
        if member == "timestamp":
            o["times"] = values
        o["members"][member] = values
        start, end = epoch_ms(s["startTime"]), epoch_ms(s["endTime"])
        o["start"] = start if o["start"] is None else min(o["start"], start)
        o["end"] = end if o["end"] is None else max(o["end"], end)
    for oid, o in objs.items():
        if o["type"] is None:
            for prefix, t in ID_PREFIXES:
                if oid.startswith(prefix):
                    o["type"] = t
            if oid.startswith("ssrc_") and oid.endswith("_recv"):
                o["type"] = "legacy-recv"
            if oid.startswith("ssrc_") and oid.endswith("_send"):
                o["type"] = "legacy-send"
    return objs


def last(o, name):
    v = o["members"].get(name)
    return v[-1] if v else None


def number(v):
    if isinstance(v, str):
        return float(v) if v.strip() else None
    return v


def mean(values):
    values = [number(v) for v in values if number(v) is not None]
    return sum(values) / len(values) if values else None


def read_pc(pc):
    objs = objects_of(pc.get("stats", {}))
    streams = {}
    remote = {}
    times = []
    for oid, o in objs.items():
        if o["times"]:
            times += [min(o["times"]), max(o["times"])]
        elif o["start"] is not None:
            times += [o["start"], o["end"]]
        t = o["type"]
        if t in ("inbound-rtp", "outbound-rtp", "legacy-recv", "legacy-send"):
            ssrc = int(number(last(o, "ssrc")))
            kind = last(o, "kind") or last(o, "mediaType")
            inbound = t in ("inbound-rtp", "legacy-recv")
            s = {
                "packets": int(number(last(o, "packetsReceived" if inbound else "packetsSent")) or 0),
                "bytes": int(number(last(o, "bytesReceived" if inbound else "bytesSent")) or 0),
            }
            if inbound or t == "legacy-send":
                s["packetsLost"] = int(number(last(o, "packetsLost")) or 0)
            if t == "legacy-send" and "googRtt" in o["members"]:
                # Each value after the first ends a poll interval; the mean over those.
                s["rttMs"] = mean([v for v in o["members"]["googRtt"][1:] if number(v)])
            streams["%s:%s:%d" % ("inbound" if inbound else "outbound", kind, ssrc)] = s
        elif t == "remote-inbound-rtp":
            ssrc = int(number(last(o, "ssrc")))
            r = {"packetsLost": int(number(last(o, "packetsLost")) or 0)}
            # The far end's round-trip times as this end sampled them, one per sample, mean;
            # a sample before the first measurement (`roundTripTimeMeasurements` 0) has none.
            rtts = o["members"].get("roundTripTime", [])
            counts = o["members"].get("roundTripTimeMeasurements")
            if counts and len(counts) == len(rtts):
                rtts = [v for v, n in zip(rtts, counts) if number(n)]
            else:
                rtts = [v for v in rtts if number(v)]
            if rtts:
                r["rttMs"] = 1000 * mean(rtts)
            remote[ssrc] = r
    for key, s in streams.items():
        direction, _, ssrc = key.split(":")
        if direction == "outbound" and int(ssrc) in remote:
            s.update(remote[int(ssrc)])
    out = {"streams": streams}
    if times:
        out["firstMs"], out["lastMs"] = min(times), max(times)
    return out


def read_dump(path):
    with open(path, encoding="utf-8") as f:
        dump = json.load(f)
    return {pc_id: read_pc(pc) for pc_id, pc in dump.get("PeerConnections", {}).items()}


def main():
    result = {os.path.basename(p): read_dump(p) for p in sys.argv[1:]}
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
