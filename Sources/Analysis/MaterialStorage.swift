import CallLog

/// Stores a call's material between runs: compact JSON, zstd-compressed.
///
/// Cold path (once per call per run), so readable JSON beats a hand-made binary layout;
/// only measured fields are written.
extension CallMaterial {
    public func encoded() -> [UInt8] {
        var o = JSONObject()
        o["call"] = .string(callID)
        if let info { o["info"] = .object(info); o["infoTs"] = .number(Double(infoTs)) }
        if let end, let endTs { o["end"] = .object(end); o["endTs"] = .number(Double(endTs)) }
        o["first"] = .number(Double(firstTs))
        o["last"] = .number(Double(lastTs))
        o["other"] = .number(Double(otherRecords))
        o["events"] = .array(events.map { e in
            .array([.number(Double(e.ts)), .string(e.kind), .string(e.action), .string(e.type), .string(e.detailJSON)])
        })
        o["snapshots"] = .array(snapshots.map(\.json))
        var text = [UInt8]()
        JSONValue.object(o).write(to: &text)
        return ZstdCompressor.compressFrame(text, level: 3)
    }

    public struct DecodingError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(decoding bytes: [UInt8]) throws {
        let (text, damage, truncated) = ZstdDecoder.decompressAll(bytes)
        guard damage.isEmpty, !truncated else { throw DecodingError(description: "stored call material is damaged") }
        let v: JSONValue
        do { v = try text.withUnsafeBufferPointer { try JSONValue.parse($0) } } catch {
            throw DecodingError(description: "stored call material is not valid: \(error)")
        }
        guard let call = v["call"]?.stringValue else { throw DecodingError(description: "stored call material has no call id") }
        self.init(callID: call)
        info = v["info"]?.objectValue
        infoTs = v["infoTs"]?.int64Value ?? .max
        end = v["end"]?.objectValue
        endTs = v["endTs"]?.int64Value
        firstTs = v["first"]?.int64Value ?? .max
        lastTs = v["last"]?.int64Value ?? .min
        otherRecords = Int(v["other"]?.int64Value ?? 0)
        events = (v["events"]?.arrayValue ?? []).compactMap { e in
            guard let a = e.arrayValue, a.count == 5, let ts = a[0].int64Value else { return nil }
            return CallEvent(callID: call, ts: ts, kind: a[1].stringValue ?? "", action: a[2].stringValue ?? "",
                             type: a[3].stringValue ?? "", detailJSON: a[4].stringValue ?? "{}")
        }
        snapshots = (v["snapshots"]?.arrayValue ?? []).compactMap(Snapshot.init(json:))
    }
}

extension Snapshot {
    var json: JSONValue {
        var o: JSONObject = ["ts": .number(Double(ts)), "pc": .string(peerConnection), "src": .string(source)]
        if statsTs.isFinite { o["st"] = .number(statsTs) }
        o["streams"] = .array(streams.map(\.json))
        if let pair { o["pair"] = pair.json }
        return .object(o)
    }

    init?(json v: JSONValue) {
        guard let ts = v["ts"]?.int64Value, let pc = v["pc"]?.stringValue, let src = v["src"]?.stringValue else { return nil }
        self.init(ts: ts, statsTs: v["st"]?.doubleValue ?? .nan, peerConnection: pc, source: src,
                  streams: (v["streams"]?.arrayValue ?? []).compactMap(StreamReading.init(json:)),
                  pair: v["pair"].flatMap(PairReading.init(json:)))
    }
}

extension PairReading {
    var json: JSONValue {
        var o = JSONObject()
        if rttMs.isFinite { o["rtt"] = .number(rttMs) }
        for (k, v) in [("l", localType), ("r", remoteType), ("t", transport), ("rp", relayProtocol), ("n", networkType)] {
            if let v { o[k] = .string(v) }
        }
        return .object(o)
    }

    init?(json v: JSONValue) {
        guard v.objectValue != nil else { return nil }
        self.init()
        rttMs = v["rtt"]?.doubleValue ?? .nan
        localType = v["l"]?.stringValue
        remoteType = v["r"]?.stringValue
        transport = v["t"]?.stringValue
        relayProtocol = v["rp"]?.stringValue
        networkType = v["n"]?.stringValue
    }
}

extension StreamReading {
    /// The numeric fields by short name, for storage.
    nonisolated(unsafe) private static let numbers: [(String, WritableKeyPath<StreamReading, Double>)] = [
        ("cr", \.clockRate), ("p", \.packets), ("b", \.bytes), ("l", \.lost), ("j", \.jitterMs),
        ("ac", \.audibleConcealed), ("ts", \.totalSamples), ("ce", \.concealmentEvents),
        ("jbd", \.jitterBufferDelay), ("jbe", \.jitterBufferEmitted), ("plc", \.plcCalls), ("dc", \.decodeCalls),
        ("jbm", \.jitterBufferMs), ("f", \.frames), ("fps", \.fps), ("w", \.width), ("h", \.height),
        ("fc", \.freezeCount), ("fs", \.freezeSeconds), ("ps", \.pauseSeconds), ("qb", \.qlBandwidth),
        ("qc", \.qlCPU), ("qo", \.qlOther), ("rtt", \.rttMs), ("rtts", \.rttTotalSeconds), ("rttn", \.rttCount),
        ("il", \.intervalLossPct),
    ]

    var json: JSONValue {
        var o: JSONObject = ["id": .string(streamID), "d": .string(direction.rawValue), "k": .string(kind.rawValue),
                             "ssrc": .number(Double(ssrc))]
        if let codec { o["codec"] = .string(codec) }
        if let q = qualityLimitation { o["ql"] = .string(q) }
        for (k, path) in StreamReading.numbers where self[keyPath: path].isFinite { o[k] = .number(self[keyPath: path]) }
        return .object(o)
    }

    init?(json v: JSONValue) {
        guard let id = v["id"]?.stringValue, let d = v["d"]?.stringValue.flatMap(StreamDirection.init(rawValue:)),
              let k = v["k"]?.stringValue.flatMap(MediaKind.init(rawValue:)), let ssrc = v["ssrc"]?.doubleValue else { return nil }
        self.init(streamID: id, direction: d, kind: k, ssrc: UInt32(truncatingIfNeeded: Int64(ssrc)))
        codec = v["codec"]?.stringValue
        qualityLimitation = v["ql"]?.stringValue
        for (key, path) in StreamReading.numbers { if let x = v[key]?.doubleValue { self[keyPath: path] = x } }
    }
}
