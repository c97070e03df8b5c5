import CallLog
import MaterialScanning

/// Stores a call's material between runs, zstd-compressed: a small JSON header (call record,
/// end: few and irregular) followed by the events and snapshots in a binary layout (many and
/// regular: JSON for them cost a fifth of the analysis time). Only measured fields are written.
///
/// Layout 3 writes what repeats once: strings go into a table as they first appear and are then
/// named by number, and an integral number is written as a varint of its change since the same
/// field of the same stream last had an integral value (counters grow by little between
/// snapshots). Other numbers are written whole. The raw material is 40 % of layout 2's, the
/// stored (compressed) 80-85 %, and encoding it costs 11 % fewer instructions, compression
/// included (DECISIONS.md). Layout 4 is layout 3 with two more numbers per stream (audio level
/// and energy) and a snapshot's data channels. Layouts 2 and 3, stored by earlier versions, are
/// still read: what they did not store reads as not reported.
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
        if let infoFile { o["infoFile"] = .string(infoFile) }
        if let endFile { o["endFile"] = .string(endFile) }
        o["first"] = .number(Double(firstTs))
        o["last"] = .number(Double(lastTs))
        o["other"] = .number(Double(otherRecords))
        var header = [UInt8]()
        JSONValue.object(o).write(to: &header)
        let out = ByteWriter(capacity: 256 + header.count + events.count * 64 + snapshots.count * 160)
        out.u8(CallMaterial.storageVersion)
        out.u32(UInt32(header.count))
        header.withUnsafeBytes { out.bytes($0) }
        var state = MaterialWriting()
        out.varint(UInt64(events.count))
        var lastTs: Int64 = 0
        for i in events.indices {  // by index: `for e in events` copied each event
            out.signed(events[i].ts &- lastTs)
            lastTs = events[i].ts
            state.strings.write(events[i].kind, slot: MaterialWriting.eventSlots, to: out)
            state.strings.write(events[i].action, slot: MaterialWriting.eventSlots + 1, to: out)
            state.strings.write(events[i].type, slot: MaterialWriting.eventSlots + 2, to: out)
            out.text(events[i].detailJSON)
        }
        out.varint(UInt64(snapshots.count))
        for i in snapshots.indices { snapshots[i].write(to: out, state: &state) }
        var compressed = [UInt8]()
        compressor.compress(out.written, .end, into: &compressed)
        return compressed
    }

    static let storageVersion: UInt8 = 4

    public struct DecodingError: Error, CustomStringConvertible {
        public var description: String
    }

    public init(decoding bytes: [UInt8]) throws {
        let (text, damage, truncated) = ZstdDecoder.decompressAll(bytes)
        guard damage.isEmpty, !truncated else { throw DecodingError(description: "stored call material is damaged") }
        var r = ByteReader(text)
        let version = try? r.u8()
        guard let version, (2...CallMaterial.storageVersion).contains(version), let headerLength = try? r.u32(),
            let headerBytes = try? r.bytes(Int(headerLength))
        else {
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
        infoFile = v["infoFile"]?.stringValue
        endFile = v["endFile"]?.stringValue
        firstTs = v["first"]?.int64Value ?? .max
        lastTs = v["last"]?.int64Value ?? .min
        otherRecords = Int(v["other"]?.int64Value ?? 0)
        do {
            if version == 2 {
                events = (v["events"]?.arrayValue ?? []).compactMap { e in
                    guard let a = e.arrayValue, a.count == 5, let ts = a[0].int64Value else { return nil }
                    return CallEvent(
                        callID: call, ts: ts, kind: a[1].stringValue ?? "", action: a[2].stringValue ?? "",
                        type: a[3].stringValue ?? "", detailJSON: a[4].stringValue ?? "{}")
                }
                let count = try r.u32()
                snapshots.reserveCapacity(r.plausibleCount(UInt64(count)))
                for _ in 0..<count { snapshots.append(try Snapshot(readingLayout2: &r)) }
            } else {
                var state = MaterialReading()
                let eventCount = try r.varint()
                events.reserveCapacity(r.plausibleCount(eventCount))
                var ts: Int64 = 0
                for _ in 0..<eventCount {
                    ts &+= try r.signed()
                    let kind = try state.string(&r) ?? "", action = try state.string(&r) ?? "", type = try state.string(&r) ?? ""
                    events.append(CallEvent(callID: call, ts: ts, kind: kind, action: action, type: type, detailJSON: try r.text()))
                }
                let count = try r.varint()
                snapshots.reserveCapacity(r.plausibleCount(count))
                for _ in 0..<count { snapshots.append(try Snapshot(reading: &r, state: &state, layout: version)) }
            }
        } catch {
            throw DecodingError(description: "stored call material is truncated")
        }
    }
}

/// What the writer of layout 3 has seen so far: strings by number, the last snapshot time, and
/// each stream's last integral value per field (the base of the next change).
struct MaterialWriting {
    var strings = StringTable()
    var numbers = FieldBases()
    var lastTs: Int64 = 0
    /// The last two peer connections written: a call's snapshots alternate between its peer
    /// connections, so the places of a snapshot's strings (`StringTable` slots) are kept per
    /// peer connection.
    private var peerConnections: [String] = []

    /// Slots: 0-2 for events, 3-4 for a snapshot's peer connection, then a block per peer
    /// connection (`slots(for:)`): its source, pair strings, then three per stream.
    static let eventSlots = 0, peerConnectionSlots = 3, blockSlots = 5, blockSize = 256

    /// The slot for peer connection `pc`'s name, and where its snapshots' slots start.
    mutating func slots(for pc: String) -> (name: Int, block: Int) {
        let place: Int
        if let k = peerConnections.firstIndex(of: pc) {
            place = k
        } else if peerConnections.count < 2 {
            peerConnections.append(pc)
            place = peerConnections.count - 1
        } else {
            peerConnections[0] = pc
            place = 0
        }
        return (MaterialWriting.peerConnectionSlots + place, MaterialWriting.blockSlots + place * MaterialWriting.blockSize)
    }
}

/// The reader's mirror of `MaterialWriting`.
struct MaterialReading {
    var strings: [String] = []
    var numbers = FieldBases()
    var lastTs: Int64 = 0

    /// A string reference (see `StringTable.write`).
    mutating func string(_ r: inout ByteReader) throws -> String? { try numbered(&r)?.string }

    /// A string reference that must name a string, with the string's number.
    mutating func numbered(_ r: inout ByteReader) throws -> (string: String, number: Int)? {
        switch try r.varint() {
        case 0: return nil
        case 1:
            let s = try r.text()
            strings.append(s)
            return (s, strings.count - 1)
        case let n:
            guard n - 2 < UInt64(strings.count) else { throw ByteReader.Overrun() }
            return (strings[Int(n - 2)], Int(n - 2))
        }
    }
}

/// Strings named by number once written: 0 is no string, 1 a new string that follows (and gets
/// the next number), n ≥ 2 the string numbered n − 2.
struct StringTable {
    /// Room for a call's usual strings (about 25) from the start: grown from empty, the table was
    /// rehashed four or five times per call.
    private var numbers: [String: Int] = Dictionary(minimumCapacity: 48)
    /// The string last written at each of the caller's places (`slot`), with its number: most
    /// strings are the ones written at the same place last time, and comparing them is cheaper
    /// than hashing (hashing every string cost more than the rest of the encoding).
    private var recent: [(string: String, number: Int)?] = []

    /// Writes a reference to `s`; returns its number (-1 for none). `slot`: the caller's name for
    /// the place `s` is written at (any value is correct; the same place, the same slot, is fast).
    @discardableResult
    mutating func write(_ s: String?, slot: Int, to out: ByteWriter) -> Int {
        guard let s else { out.varint(0); return -1 }
        if slot < recent.count, let last = recent[slot], last.string == s {
            out.varint(UInt64(last.number) + 2)
            return last.number
        }
        let n: Int
        if let known = numbers[s] {
            n = known
            out.varint(UInt64(n) + 2)
        } else {
            n = numbers.count
            numbers[s] = n
            out.varint(1)
            out.text(s)
        }
        if slot >= recent.count { recent.append(contentsOf: repeatElement(nil, count: slot + 1 - recent.count)) }
        recent[slot] = (s, n)
        return n
    }
}

/// The base for each field's next change: per row (a stream's, named by its id's string number;
/// a peer connection's for the snapshot's own numbers) and field, the last integral value written,
/// 0 before any. Writer and reader keep the same bases, so both take the same base for every
/// number.
struct FieldBases {
    /// Fields per row: a stream's numbers (`StreamReading.numbers`), or a snapshot's pair RTT
    /// and stats time. A literal: a static computed from another cost a lazy-init check per use.
    static let width = 36
    private var bases: [Int64] = []
    /// Each row's place in `bases`, by the row's string number: string n's fields start at
    /// `(rowOfString[n] - 1) * width` (0: no room yet). Rows are numbered as they are first
    /// used, so the bases hold one row per stream and peer connection: indexed by string number
    /// itself, stored material that names string 5,000,000 made room for 5,000,001 rows (1 GB).
    private var rowOfString: [Int32] = []

    /// Rows with room made (streams and peer connections seen).
    var rowCount: Int { bases.count / FieldBases.width }

    /// `v` as an integer when a varint of its change carries it exactly (not −0, which would come
    /// back as 0; not beyond 2^53, where doubles skip integers).
    @inline(__always) static func integer(_ v: Double) -> Int64? {
        guard abs(v) < 9_007_199_254_740_992 else { return nil }  // NaN fails too
        let i = Int64(v)
        return Double(i) == v && (i != 0 || v.sign == .plus) ? i : nil
    }

    /// Writes `values[i]` for each bit `i` of `mask` (values that are not NaN), on `row`.
    mutating func write(_ values: UnsafeBufferPointer<Double>, mask: UInt64, row: Int, to out: ByteWriter) {
        let start = room(row: row)
        // Room for the longest form of each (a one-byte mark and 8 bytes, or a varint of up to
        // 9 bytes): checked once, not per number.
        out.withRoom(9 * mask.nonzeroBitCount) { p in
            bases.withUnsafeMutableBufferPointer { b in
                var written = 0
                var m = mask
                while m != 0 {
                    let i = m.trailingZeroBitCount
                    m &= m - 1
                    written += FieldBases.write(values[i], base: &b[start + i], to: p + written)
                }
                return written
            }
        }
    }

    mutating func write(_ v: Double, row: Int, field: Int, to out: ByteWriter) {
        let i = room(row: row) + field
        out.withRoom(9) { p in FieldBases.write(v, base: &bases[i], to: p) }
    }

    /// An integer as a varint of its change from `base` (low bit 0), anything else as 1 and
    /// its 8 bytes; returns the bytes written.
    @inline(__always) private static func write(_ v: Double, base: inout Int64, to p: UnsafeMutablePointer<UInt8>) -> Int {
        if let n = integer(v) {
            let written = ByteWriter.varint(ByteWriter.zigzag(n &- base) << 1, to: p)
            base = n
            return written
        }
        p[0] = 1
        UnsafeMutableRawPointer(p + 1).storeBytes(of: v.bitPattern.littleEndian, as: UInt64.self)
        return 9
    }

    mutating func read(_ r: inout ByteReader, row: Int, field: Int) throws -> Double {
        let i = room(row: row) + field
        let x = try r.varint()
        if x & 1 == 1 { return try r.f64() }
        let n = bases[i] &+ ByteReader.unzigzag(x >> 1)
        guard abs(n) < 9_007_199_254_740_992 else { throw ByteReader.Overrun() }
        bases[i] = n
        return Double(n)
    }

    /// The index of `row`'s first field, with room made for the row. `row` is a string's
    /// number: less than the count of strings read or written, 4 bytes each here.
    private mutating func room(row: Int) -> Int {
        if row >= rowOfString.count { rowOfString.append(contentsOf: repeatElement(0, count: row + 1 - rowOfString.count)) }
        let place = Int(rowOfString[row])
        guard place == 0 else { return (place - 1) * FieldBases.width }
        bases.append(contentsOf: repeatElement(0, count: FieldBases.width))
        rowOfString[row] = Int32(rowCount)
        return bases.count - FieldBases.width
    }
}

extension Snapshot {
    /// Fields of `FieldBases` for what a snapshot has besides its streams (on its peer
    /// connection's row).
    private static let pairRTTField = 0, statsTsField = 1
    /// Layout 4: the data channels' message totals.
    private static let messagesSentField = 2, messagesReceivedField = 3

    func write(to out: ByteWriter, state: inout MaterialWriting) {
        out.signed(ts &- state.lastTs)
        state.lastTs = ts
        let slots = state.slots(for: peerConnection)
        // The snapshot's own numbers are kept on the row of its peer connection's name.
        let row = state.strings.write(peerConnection, slot: slots.name, to: out)
        state.numbers.write(statsTs, row: row, field: Snapshot.statsTsField, to: out)
        state.strings.write(source, slot: slots.block, to: out)
        if let pair {
            out.u8(1)
            state.numbers.write(pair.rttMs, row: row, field: Snapshot.pairRTTField, to: out)
            state.strings.write(pair.localType, slot: slots.block + 1, to: out)
            state.strings.write(pair.remoteType, slot: slots.block + 2, to: out)
            state.strings.write(pair.transport, slot: slots.block + 3, to: out)
            state.strings.write(pair.relayProtocol, slot: slots.block + 4, to: out)
            state.strings.write(pair.networkType, slot: slots.block + 5, to: out)
        } else {
            out.u8(0)
        }
        if let d = dataChannels {
            out.u8(1)
            out.varint(UInt64(max(0, d.channels)))
            out.varint(UInt64(max(0, d.open)))
            state.numbers.write(d.messagesSent, row: row, field: Snapshot.messagesSentField, to: out)
            state.numbers.write(d.messagesReceived, row: row, field: Snapshot.messagesReceivedField, to: out)
        } else {
            out.u8(0)
        }
        out.varint(UInt64(streams.count))
        for k in streams.indices {
            streams[k].write(to: out, state: &state, slots: slots.block + 6 + 3 * min(k, (MaterialWriting.blockSize - 6) / 3 - 1))
        }
    }

    /// `layout`: 3 or 4 (4 adds the data channels).
    init(reading r: inout ByteReader, state: inout MaterialReading, layout: UInt8) throws {
        state.lastTs &+= try r.signed()
        let ts = state.lastTs
        guard let (pc, pcRow) = try state.numbered(&r) else { throw ByteReader.Overrun() }
        let statsTs = try state.numbers.read(&r, row: pcRow, field: Snapshot.statsTsField)
        guard let source = try state.string(&r) else { throw ByteReader.Overrun() }
        var pair: PairReading?
        if try r.u8() == 1 {
            var p = PairReading()
            p.rttMs = try state.numbers.read(&r, row: pcRow, field: Snapshot.pairRTTField)
            p.localType = try state.string(&r)
            p.remoteType = try state.string(&r)
            p.transport = try state.string(&r)
            p.relayProtocol = try state.string(&r)
            p.networkType = try state.string(&r)
            pair = p
        }
        var dataChannels: DataChannelReading?
        if layout >= 4, try r.u8() == 1 {
            var d = DataChannelReading()
            let channels = try r.varint(), open = try r.varint()
            guard channels <= UInt64(Int32.max), open <= channels else { throw ByteReader.Overrun() }
            d.channels = Int(channels)
            d.open = Int(open)
            // NaN is written whole, so a total not reported reads back as NaN.
            d.messagesSent = try state.numbers.read(&r, row: pcRow, field: Snapshot.messagesSentField)
            d.messagesReceived = try state.numbers.read(&r, row: pcRow, field: Snapshot.messagesReceivedField)
            dataChannels = d
        }
        let n = try r.varint()
        var streams: [StreamReading] = []
        streams.reserveCapacity(Int(min(n, 64)))
        for _ in 0..<n { streams.append(try StreamReading(reading: &r, state: &state)) }
        self.init(
            ts: ts, statsTs: statsTs, peerConnection: pc, source: source, streams: streams, pair: pair, dataChannels: dataChannels)
    }

    /// Layout 2: fixed-width numbers, strings inline.
    init(readingLayout2 r: inout ByteReader) throws {
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
        for _ in 0..<n { streams.append(try StreamReading(readingLayout2: &r)) }
        self.init(ts: ts, statsTs: statsTs, peerConnection: pc, source: source, streams: streams, pair: pair)
    }
}

extension StreamReading {
    /// The numeric fields, in storage order (append only: the order is the layout).
    nonisolated(unsafe) static let numbers: [WritableKeyPath<StreamReading, Double>] = [
        \.clockRate, \.packets, \.bytes, \.lost, \.storedJitterMs, \.audibleConcealed, \.totalSamples, \.concealmentEvents,
        \.jitterBufferDelay, \.jitterBufferEmitted, \.plcCalls, \.decodeCalls, \.jitterBufferMs, \.frames, \.fps,
        \.width, \.height, \.freezeCount, \.freezeSeconds, \.pauseSeconds, \.qlBandwidth, \.qlCPU, \.qlOther,
        \.rttMs, \.rttTotalSeconds, \.rttCount, \.intervalLossPct, \.firstTs,
        \.xrLossPct, \.xrDiscardPct, \.xrRFactor, \.xrMosLQ, \.xrMosCQ, \.xrJitterBufferMs,
        // Layout 4.
        \.audioLevel, \.audioEnergy,
    ]

    /// The layout's one jitter field: a stream has the jitter of its direction only (measured
    /// here on an inbound stream, reported by the far end on an outbound one; the other is NaN),
    /// so one field stores either. Read back after the direction, which says where it goes.
    var storedJitterMs: Double {
        get { direction == .inbound ? inboundJitterMs : remoteReportedJitterMs }
        set { if direction == .inbound { inboundJitterMs = newValue } else { remoteReportedJitterMs = newValue } }
    }

    /// `slots`: the first of three `StringTable` slots for this stream's place in its snapshot.
    func write(to out: ByteWriter, state: inout MaterialWriting, slots: Int) {
        let row = state.strings.write(streamID, slot: slots, to: out)
        out.u8((direction == .inbound ? 0 : 1) | (kind == .audio ? 0 : 2))
        out.varint(UInt64(ssrc))
        state.strings.write(codec, slot: slots + 1, to: out)
        state.strings.write(qualityLimitation, slot: slots + 2, to: out)
        // Spelled out rather than through `numbers`: key paths cost a lookup per field, and this
        // runs for every stream of every snapshot.
        let values = (
            clockRate, packets, bytes, lost, storedJitterMs, audibleConcealed, totalSamples, concealmentEvents,
            jitterBufferDelay, jitterBufferEmitted, plcCalls, decodeCalls, jitterBufferMs, frames, fps,
            width, height, freezeCount, freezeSeconds, pauseSeconds, qlBandwidth, qlCPU, qlOther,
            rttMs, rttTotalSeconds, rttCount, intervalLossPct, firstTs,
            xrLossPct, xrDiscardPct, xrRFactor, xrMosLQ, xrMosCQ, xrJitterBufferMs,
            audioLevel, audioEnergy
        )
        withUnsafeBytes(of: values) { raw in
            let v = raw.bindMemory(to: Double.self)
            precondition(v.count == StreamReading.numbers.count)
            var mask: UInt64 = 0
            for i in 0..<v.count where !v[i].isNaN { mask |= 1 << UInt64(i) }
            out.varint(mask)
            state.numbers.write(v, mask: mask, row: row, to: out)
        }
    }

    init(reading r: inout ByteReader, state: inout MaterialReading) throws {
        guard let (id, row) = try state.numbered(&r) else { throw ByteReader.Overrun() }
        let flags = try r.u8()
        let ssrc = try r.varint()
        guard ssrc <= UInt64(UInt32.max) else { throw ByteReader.Overrun() }
        self.init(
            streamID: id, direction: flags & 1 == 0 ? .inbound : .outbound, kind: flags & 2 == 0 ? .audio : .video,
            ssrc: UInt32(ssrc))
        codec = try state.string(&r)
        qualityLimitation = try state.string(&r)
        let mask = try r.varint()
        for (i, path) in StreamReading.numbers.enumerated() where mask & (1 << UInt64(i)) != 0 {
            self[keyPath: path] = try state.numbers.read(&r, row: row, field: i)
        }
    }

    /// Layout 2: a 32-bit mask, then each measured number as 8 bytes.
    init(readingLayout2 r: inout ByteReader) throws {
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

/// Builds the stored layout: little-endian fixed-width numbers and varints. Writes through a
/// pointer into storage it grows itself: appending each number to an array cost a capacity
/// check and a copy call per field, for every stream of every snapshot.
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

    /// An unsigned LEB128 varint: 7 bits a byte, low bits first.
    @inline(__always) func varint(_ v: UInt64) {
        withRoom(10) { ByteWriter.varint(v, to: $0) }
    }

    /// Writes `v` as a varint at `p` (room for 10 bytes); returns the bytes written.
    @inline(__always) static func varint(_ v: UInt64, to p: UnsafeMutablePointer<UInt8>) -> Int {
        var v = v
        var n = 0
        while v >= 0x80 {
            p[n] = UInt8(truncatingIfNeeded: v) | 0x80
            n += 1
            v >>= 7
        }
        p[n] = UInt8(v)
        return n + 1
    }

    /// Lets `body` write up to `maxBytes` at the end; it returns how many it wrote.
    @inline(__always) func withRoom(_ maxBytes: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        reserve(maxBytes)
        count += body((base + count).assumingMemoryBound(to: UInt8.self))
    }

    /// A signed number as a varint of its zigzag form (small of either sign: few bytes).
    @inline(__always) func signed(_ v: Int64) { varint(ByteWriter.zigzag(v)) }

    @inline(__always) static func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }

    /// A string of any length: a varint of its UTF-8 length, then the bytes.
    func text(_ s: String) {
        var s = s
        s.withUTF8 { b in
            varint(UInt64(b.count))
            bytes(UnsafeRawBufferPointer(b))
        }
    }

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

}

/// Reads what `ByteWriter` wrote (and layout 2's strings: a 16-bit length and their UTF-8,
/// 0xFFFF for none), failing on any overrun.
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

    mutating func varint() throws -> UInt64 {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard pos < bytes.count, shift < 64 else { throw Overrun() }
            let b = bytes[pos]
            pos += 1
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return v }
            shift += 7
        }
    }

    /// A count read from the bytes, capped by what the bytes left could hold (an item takes a
    /// few bytes at least): damaged input must not reserve gigabytes.
    func plausibleCount(_ n: UInt64) -> Int { Int(min(n, UInt64(bytes.count - pos) / 4, 1 << 20)) }

    mutating func signed() throws -> Int64 { ByteReader.unzigzag(try varint()) }

    static func unzigzag(_ v: UInt64) -> Int64 { Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1) }

    /// A string written by `ByteWriter.text`.
    mutating func text() throws -> String {
        let n = try varint()
        guard n <= UInt64(bytes.count - pos) else { throw Overrun() }
        return try text(Int(n))
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
