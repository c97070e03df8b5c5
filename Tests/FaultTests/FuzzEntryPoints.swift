import Analysis
@testable import CallLog
import Capture
import MaterialCodec
@testable import MaterialScanning

/// What each libFuzzer target does with one input, shared by the fuzzers (`Fuzz/build.sh`
/// compiles this file into them) and by `FuzzReplayTests`, which feeds the seed corpus and
/// every input a fuzzer ever crashed on through exactly the same code.
enum FuzzEntryPoints {
    /// One input is a log's text. Every line goes through both readers of the format — the
    /// complete parser with delta restoration (`LogRecord`, `StatsDeltaDecoder`, as `LogReader`
    /// and `callstats cat` use them) and the analyser's fast path (`RecordIngestor`: the stats
    /// scanner on `stats` records) — and every call collected is analysed, stored, decoded and
    /// merged again, as `callstats analyze` does. Returns the records both paths accepted.
    ///
    /// The scanner keeps each chain from one full report to the next and reads only what
    /// changed; after every full report its state must equal a fresh scanner's reading of that
    /// report alone, or the input stops with a failure; so must a plain event (`PlainEvent`) and
    /// a plain quality callback (`PlainQuality`) the complete parser's.
    @discardableResult
    static func records(_ text: UnsafeBufferPointer<UInt8>) -> (parsed: Int, ingested: Int) {
        var deltas = StatsDeltaDecoder()
        var ingestor = RecordIngestor()
        var kept = StatsScanner()
        var parsed = 0, ingested = 0
        var start = 0
        while start <= text.count {
            let end = text[start...].firstIndex(of: 0x0A) ?? text.count
            let line = UnsafeBufferPointer(rebasing: text[start..<end])
            if let record = try? LogRecord(parsing: line), let full = try? deltas.decode(record) {
                var out: [UInt8] = []
                full.write(to: &out)  // what `callstats cat` prints
                if full.kind == .end { deltas.forget(call: full.call) }
                parsed += 1
            }
            switch ingestor.ingest(line) {
            case .used(let call, let ended):
                ingested += 1
                if ended, let m = ingestor.take(call) { analyse(m) }
            case .agentNote, .usedPartly: ingested += 1
            case .skipped: break
            }
            _ = RecordIngestor.callID(line)  // how readers sharing a file deal its lines out
            // A plain event or quality callback read from its bytes must be what the complete
            // parser reads.
            if let plain = PlainEvent(line) { sameAsParser(line, "plain event", call: plain.call) { $0.add(plain) } }
            if let plain = PlainQuality(line) { sameAsParser(line, "plain quality", call: plain.call) { $0.add(plain) } }
            if let scanned = try? kept.scan(line) {
                var fresh = StatsScanner()
                if let alone = try? fresh.scan(line) {  // a full report (a delta needs its base)
                    if let difference = difference(kept[chain: scanned.chain], fresh[chain: alone.chain]) {
                        preconditionFailure("kept scanner state differs from a fresh read: \(difference)")
                    }
                }
            }
            start = end + 1
        }
        for m in ingestor.takeAll() { analyse(m) }
        return (parsed, ingested)
    }

    /// Stops the input unless the complete parser accepts `line` and makes of it the material
    /// that `add` made of the record read straight from the bytes.
    static func sameAsParser(_ line: UnsafeBufferPointer<UInt8>, _ what: String, call: String, add: (inout CallMaterial) -> Void) {
        guard let record = try? LogRecord(parsing: line) else { preconditionFailure("\(what) the parser rejects") }
        var parsedMaterial = CallMaterial(callID: record.call), plainMaterial = CallMaterial(callID: call)
        parsedMaterial.add(record)
        add(&plainMaterial)
        precondition(parsedMaterial == plainMaterial, "\(what) read differently: \(plainMaterial) against \(parsedMaterial)")
    }

    /// What differs between two chain states' objects, or nil when they are the same.
    static func difference(_ a: ChainState, _ b: ChainState) -> String? {
        func same(_ x: Double, _ y: Double) -> Bool { x == y || (x.isNaN && y.isNaN) }
        guard a.t == b.t else { return "common timestamp \(String(describing: a.t)) vs \(String(describing: b.t))" }
        guard Set(a.objects.keys) == Set(b.objects.keys) else { return "ids \(a.objects.keys) vs \(b.objects.keys)" }
        for (id, x) in zip(a.objects.keys, a.objects.values) {
            guard let y = b.objects[id] else { continue }
            if x.type != y.type { return "\(id): type" }
            if !same(x.timestamp, y.timestamp) { return "\(id): timestamp" }
            if x.str != y.str { return "\(id): strings \(x.str) vs \(y.str)" }
            if !zip(x.num, y.num).allSatisfy(same) { return "\(id): numbers \(x.num) vs \(y.num)" }
            if x.rate != y.rate { return "\(id): rates" }
        }
        return nil
    }

    private static func analyse(_ material: CallMaterial) {
        var m = material
        m.normalize()
        _ = CallAnalyzer.analyze(m)
        if var stored = try? CallMaterial(decoding: m.encoded()) {
            stored.merge(m)
            _ = CallAnalyzer.analyze(stored)
        }
    }

    /// One input is a compressed log file; its first byte chooses the size of the reads
    /// (1…4081 bytes) and of the line chunks (1…2041 bytes), so frames, blocks and lines are
    /// split at every offset. The rest goes
    /// through the zstd frame reader and the line chunker exactly as `LogLineReader` feeds
    /// them. Returns the complete lines delivered.
    @discardableResult
    static func zstd(_ input: UnsafeRawBufferPointer) -> Int {
        guard let first = input.first else { return 0 }
        let chunk = 1 + Int(first) * 16
        let file = UnsafeRawBufferPointer(rebasing: input[1...])
        let decoder = ZstdDecoder()
        var chunker = LineChunker(path: "fuzz", chunkBytes: 1 + Int(first) * 8, maximumLineBytes: 1 << 16)
        var lines = 0, ends = 0  // each line's first and last byte read: a range past the chunk is caught
        let handOut = { (c: inout LineChunk) in
            c.forEachLine(
                { line, _ in
                    lines += 1
                    ends &+= Int(line.first ?? 0) &+ Int(line.last ?? 0)
                }, issue: { _ in })
        }
        var offset = 0
        while offset < file.count {
            let piece = UnsafeRawBufferPointer(rebasing: file[offset..<min(file.count, offset + chunk)])
            chunker.decompress(piece, with: decoder, handOut)
            offset += chunk
        }
        chunker.finish(handOut)
        return ends == -1 ? 0 : lines
    }

    static let linkTypes: [LinkType] = [.ethernet, .linuxSLL, .linuxSLL2, .raw, .ipv4, .ipv6, .null, .loop, .rawBSD12, .rawBSD14]

    /// One input is a short capture: the first byte chooses the link type, then frames, each
    /// preceded by its length (2 bytes, big-endian). Each frame goes through the whole capture
    /// pipeline (`CaptureSession`: link, VLAN, IP with fragment reassembly, UDP, then the RTP,
    /// RTCP, STUN, TURN and SIP decoders), and its bytes also through each payload decoder
    /// directly. A fresh session per input keeps inputs independent, so a crash replays from its
    /// input alone. Returns the records the session wrote.
    @discardableResult
    static func capture(_ input: UnsafeRawBufferPointer) -> Int {
        guard let first = input.first else { return 0 }
        let link = linkTypes[Int(first) % linkTypes.count]
        var records = 0
        var session = CaptureSession(sink: { _ in records += 1 })
        var offset = 1
        var frame = 0
        while offset < input.count {
            let length = offset + 2 <= input.count ? Int(input[offset]) << 8 | Int(input[offset + 1]) : 0
            let bytes = UnsafeRawBufferPointer(rebasing: input[min(input.count, offset + 2)..<min(input.count, offset + 2 + length)])
            offset += 2 + length
            frame += 1
            // Time advances 20 ms a frame, so reassembly timeouts and interval reports run too.
            session.process(frame: bytes, linkType: link, timestampNanos: Int64(frame) * 20_000_000)
            _ = RTPHeader.parse(bytes, wireLength: bytes.count + (frame & 7))
            _ = PayloadClassifier.classify(bytes, wireLength: bytes.count)
            _ = RTCPCompound.parse(bytes)
            _ = STUNMessage.parse(bytes)
            _ = SIPMessage.parse(bytes, anyText: true)
        }
        session.tick(nowNanos: Int64(frame + 1_000) * 20_000_000)
        return records
    }
}
