import CallLog

/// Stores a call's material between runs, zstd-compressed: a small JSON header (call record,
/// end, events: few and irregular) followed by the snapshots in a binary layout (many and
/// regular: JSON for them cost a fifth of the analysis time). Only measured fields are written.
extension CallMaterial {
    /// zstd's fast level -1: on the simulated and real-shaped corpora it compressed the material
    /// a third faster than level 1, for 2-8 % more bytes (material is read only when a call
    /// continues in a later run).
    public static let compressionLevel: Int32 = -1

    /// The stored form. `compressor`: one kept by the caller (a reader thread) and reused, since
    /// setting up a zstd context for each call cost more than compressing its material.
    public func encoded(using compressor: ZstdCompressor = ZstdCompressor(level: CallMaterial.compressionLevel)) -> [UInt8] {
        var o = JSONObject()
        o["call"] = .string(callID)
        if let info { o["info"] = .object(info); o["infoTs"] = .number(Double(infoTs)) }
        if info?["network"] != nil { o["networkTs"] = .number(Double(networkTs)) }
        if let end, let endTs { o["end"] = .object(end); o["endTs"] = .number(Double(endTs)) }
        o["first"] = .number(Double(firstTs))
        o["last"] = .number(Double(lastTs))
        o["other"] = .number(Double(otherRecords))
        o["events"] = .array(events.map { e in
            .array([.number(Double(e.ts)), .string(e.kind), .string(e.action), .string(e.type), .string(e.detailJSON)])
        })
        var header = [UInt8]()
        JSONValue.object(o).write(to: &header)
        let out = ByteWriter(capacity: 256 + header.count + snapshots.count * 512)
        out.u8(CallMaterial.storageVersion)
        out.u32(UInt32(header.count))
        header.withUnsafeBytes { out.bytes($0) }
        out.u32(UInt32(snapshots.count))
        for snap in snapshots { snap.write(to: out) }
        var compressed = [UInt8]()
        compressor.compress(out.written, .end, into: &compressed)
        return compressed
    }

    static let storageVersion: UInt8 = 2

    public struct DecodingError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(decoding bytes: [UInt8]) throws {
        let (text, damage, truncated) = ZstdDecoder.decompressAll(bytes)
        guard damage.isEmpty, !truncated else { throw DecodingError(description: "stored call material is damaged") }
        var r = ByteReader(text)
        guard (try? r.u8()) == CallMaterial.storageVersion, let headerLength = try? r.u32(),
              let headerBytes = try? r.bytes(Int(headerLength)) else {
            throw DecodingError(description: "stored call material has an unknown layout")
        }
        let v: JSONValue
        do { v = try headerBytes.withUnsafeBufferPointer { try JSONValue.parse($0) } } catch {
            throw DecodingError(description: "stored call material is not valid: \(error)")
        }
        guard let call = v["call"]?.stringValue else { throw DecodingError(description: "stored call material has no call id") }
        self.init(callID: call)
        info = v["info"]?.objectValue
        infoTs = v["infoTs"]?.int64Value ?? .max
        // Stored before the network had its own time: the call record's time stands for it.
        networkTs = v["networkTs"]?.int64Value ?? (info?["network"] != nil ? infoTs : .min)
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
        do {
            let count = try r.u32()
            snapshots.reserveCapacity(Int(min(count, 1 << 20)))
            for _ in 0..<count { snapshots.append(try Snapshot(reading: &r)) }
        } catch {
            throw DecodingError(description: "stored call material is truncated")
        }
    }
}

extension Snapshot {
    func write(to out: ByteWriter) {
        out.u64(UInt64(bitPattern: ts))
        out.f64(statsTs)
        out.string(peerConnection)
        out.string(source)
        if let pair {
            out.u8(1)
            out.f64(pair.rttMs)
            out.optional(pair.localType)
            out.optional(pair.remoteType)
            out.optional(pair.transport)
            out.optional(pair.relayProtocol)
            out.optional(pair.networkType)
        } else {
            out.u8(0)
        }
        out.u32(UInt32(streams.count))
        for s in streams { s.write(to: out) }
    }

    init(reading r: inout ByteReader) throws {
        let ts = try r.i64(), statsTs = try r.f64(), pc = try r.string(), source = try r.string()
        var pair: PairReading?
        if try r.u8() == 1 {
            var p = PairReading()
            p.rttMs = try r.f64()
            p.localType = try r.optional()
            p.remoteType = try r.optional()
            p.transport = try r.optional()
            p.relayProtocol = try r.optional()
            p.networkType = try r.optional()
            pair = p
        }
        let n = try r.u32()
        var streams: [StreamReading] = []
        for _ in 0..<n { streams.append(try StreamReading(reading: &r)) }
        self.init(ts: ts, statsTs: statsTs, peerConnection: pc, source: source, streams: streams, pair: pair)
    }
}

extension StreamReading {
    /// The numeric fields, in storage order (append only: the order is the layout).
    nonisolated(unsafe) private static let numbers: [WritableKeyPath<StreamReading, Double>] = [
        \.clockRate, \.packets, \.bytes, \.lost, \.jitterMs, \.audibleConcealed, \.totalSamples, \.concealmentEvents,
        \.jitterBufferDelay, \.jitterBufferEmitted, \.plcCalls, \.decodeCalls, \.jitterBufferMs, \.frames, \.fps,
        \.width, \.height, \.freezeCount, \.freezeSeconds, \.pauseSeconds, \.qlBandwidth, \.qlCPU, \.qlOther,
        \.rttMs, \.rttTotalSeconds, \.rttCount, \.intervalLossPct,
    ]

    func write(to out: ByteWriter) {
        out.string(streamID)
        out.u8(direction == .inbound ? 0 : 1)
        out.u8(kind == .audio ? 0 : 1)
        out.u32(ssrc)
        out.optional(codec)
        out.optional(qualityLimitation)
        // Spelled out rather than through `numbers`: key paths cost a lookup per field, and this
        // runs for every stream of every snapshot.
        let values = (clockRate, packets, bytes, lost, jitterMs, audibleConcealed, totalSamples, concealmentEvents,
                      jitterBufferDelay, jitterBufferEmitted, plcCalls, decodeCalls, jitterBufferMs, frames, fps,
                      width, height, freezeCount, freezeSeconds, pauseSeconds, qlBandwidth, qlCPU, qlOther,
                      rttMs, rttTotalSeconds, rttCount, intervalLossPct)
        withUnsafeBytes(of: values) { raw in
            let v = raw.bindMemory(to: Double.self)
            precondition(v.count == StreamReading.numbers.count)
            var mask: UInt32 = 0
            for i in 0..<v.count where !v[i].isNaN { mask |= 1 << UInt32(i) }
            out.u32(mask)
            out.reserve(8 * mask.nonzeroBitCount)
            for i in 0..<v.count where !v[i].isNaN { out.f64(v[i]) }
        }
    }

    init(reading r: inout ByteReader) throws {
        let id = try r.string()
        let d: StreamDirection = try r.u8() == 0 ? .inbound : .outbound
        let k: MediaKind = try r.u8() == 0 ? .audio : .video
        self.init(streamID: id, direction: d, kind: k, ssrc: try r.u32())
        codec = try r.optional()
        qualityLimitation = try r.optional()
        let mask = try r.u32()
        for (i, path) in StreamReading.numbers.enumerated() where mask & (1 << UInt32(i)) != 0 { self[keyPath: path] = try r.f64() }
    }
}

/// Builds the stored layout: little-endian numbers, strings as a 16-bit length and their UTF-8
/// (0xFFFF: no string). Writes through a pointer into storage it grows itself: appending each
/// number to an array cost a capacity check and a copy call per field, for every stream of
/// every snapshot.
final class ByteWriter {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
    }

    deinit { base.deallocate() }

    /// The bytes written so far (valid until the next write).
    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    @inline(__always) func reserve(_ n: Int) {
        if count + n > capacity { grow(to: count + n) }
    }

    private func grow(to needed: Int) {
        let larger = max(needed, capacity * 2)
        let moved = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 8)
        moved.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = moved
        capacity = larger
    }

    @inline(__always) func u8(_ v: UInt8) {
        reserve(1)
        base.storeBytes(of: v, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always) func u32(_ v: UInt32) {
        reserve(4)
        base.storeBytes(of: v.littleEndian, toByteOffset: count, as: UInt32.self)
        count += 4
    }

    @inline(__always) func u64(_ v: UInt64) {
        reserve(8)
        base.storeBytes(of: v.littleEndian, toByteOffset: count, as: UInt64.self)
        count += 8
    }

    @inline(__always) func f64(_ v: Double) { u64(v.bitPattern) }

    func bytes(_ b: UnsafeRawBufferPointer) {
        guard let source = b.baseAddress, !b.isEmpty else { return }
        reserve(b.count)
        (base + count).copyMemory(from: source, byteCount: b.count)
        count += b.count
    }

    func string(_ s: String) {
        var s = s
        s.withUTF8 { b in
            let n = min(b.count, 0xFFFE)
            u8(UInt8(n & 0xFF))
            u8(UInt8(n >> 8))
            bytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: b[..<n])))
        }
    }

    func optional(_ s: String?) {
        if let s { string(s) } else { u8(0xFF); u8(0xFF) }
    }
}

/// Reads what `ByteWriter` wrote, failing on any overrun.
struct ByteReader {
    struct Overrun: Error {}
    let bytes: [UInt8]
    var pos = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func bytes(_ n: Int) throws -> [UInt8] {
        guard n >= 0, pos + n <= bytes.count else { throw Overrun() }
        defer { pos += n }
        return Array(bytes[pos..<(pos + n)])
    }

    /// A little-endian unsigned integer of `n` bytes.
    private mutating func little(_ n: Int) throws -> UInt64 {
        guard pos + n <= bytes.count else { throw Overrun() }
        var v: UInt64 = 0
        for i in 0..<n { v |= UInt64(bytes[pos + i]) << (8 * UInt64(i)) }
        pos += n
        return v
    }

    mutating func u8() throws -> UInt8 { UInt8(try little(1)) }
    mutating func u16() throws -> Int { Int(try little(2)) }
    mutating func u32() throws -> UInt32 { UInt32(try little(4)) }
    mutating func i64() throws -> Int64 { Int64(bitPattern: try little(8)) }
    mutating func f64() throws -> Double { Double(bitPattern: try little(8)) }
    mutating func string() throws -> String { try text(try u16()) }
    mutating func optional() throws -> String? {
        let n = try u16()
        return n == 0xFFFF ? nil : try text(n)
    }

    private mutating func text(_ n: Int) throws -> String {
        guard pos + n <= bytes.count else { throw Overrun() }
        defer { pos += n }
        return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[pos..<(pos + n)]), as: UTF8.self) }
    }
}
