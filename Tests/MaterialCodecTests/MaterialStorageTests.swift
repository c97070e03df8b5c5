import Analysis
import CallLog
@testable import MaterialCodec
import MaterialScanning
import MaterialTestSupport
import Simulator
import XCTest

final class MaterialStorageTests: XCTestCase {
    let t0: Int64 = 1_795_000_000_000

    /// Material stored by earlier versions (layout 2, written by them from `fixtureRecords`)
    /// reads back as the same material that reading those records gives now.
    func testLayout2StoredByEarlierVersionsStillReads() throws {
        let hex = Self.layout2Fixture.joined()
        let bytes = stride(from: 0, to: hex.count, by: 2).map { i -> UInt8 in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
        let stored = try CallMaterial(decoding: bytes)
        let fresh = try Harness.material(Self.fixtureRecords(t0))
        XCTAssertEqual(stored.snapshots.count, 5)
        XCTAssertEqual(stored.events.count, 3)
        XCTAssertEqual(stored.events.map(\.kind).sorted(), ["end", "event", "quality"])
        XCTAssertTrue(stored.events.contains { $0.detailJSON.contains(#"say \"hi\"\n"#) })
        XCTAssertEqual(stored.encoded(), fresh.encoded())
        XCTAssertEqual(CallAnalyzer.analyze(stored).call, CallAnalyzer.analyze(fresh).call)
    }

    static func bytes(hex chunks: [String]) -> [UInt8] {
        let hex = chunks.joined()
        return stride(from: 0, to: hex.count, by: 2).map { i -> UInt8 in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    /// Material stored by the releases that wrote layout 3 reads back as the same material
    /// that reading the records gives now: what layout 3 did not store (audio levels, data
    /// channels) reads as not reported.
    func testLayout3StoredByEarlierVersionsStillReads() throws {
        let bytes = Self.bytes(hex: Self.layout3Fixture)
        XCTAssertEqual(ZstdDecoder.decompressAll(bytes).0.first, 3, "the fixture is layout 3")
        let stored = try CallMaterial(decoding: bytes)
        // `analyze` stored it in order (events sorted by time), as the analyser reads material.
        var fresh = try Harness.material(Self.fixtureRecords(t0))
        fresh.normalize()
        XCTAssertEqual(stored.snapshots.count, 5)
        XCTAssertEqual(stored.events.count, 3)
        XCTAssertTrue(stored.snapshots.allSatisfy { $0.dataChannels == nil })
        XCTAssertTrue(stored.snapshots.allSatisfy { $0.streams.allSatisfy { $0.audioLevel.isNaN && $0.audioEnergy.isNaN } })
        XCTAssertEqual(stored.encoded(), fresh.encoded())
        XCTAssertEqual(CallAnalyzer.analyze(stored).call, CallAnalyzer.analyze(fresh).call)
    }

    /// Layout 4's additions come back exactly: audio level and energy on streams, a snapshot's
    /// data channels (with totals reported, not reported, and absent), beside layout 3's fields.
    func testLayout4KeepsAudioLevelsAndDataChannels() throws {
        var m = CallMaterial(callID: "l4")
        for k in 0..<6 {
            var audio = StreamReading(streamID: "pc0:inbound:audio:1", direction: .inbound, kind: .audio, ssrc: 1)
            audio.packets = Double(k * 500)
            audio.audioLevel = k == 3 ? 0 : 0.125 * Double(k)
            audio.audioEnergy = k % 2 == 0 ? Double(k) * 0.015625 : .nan
            var d = DataChannelReading()
            d.channels = 2
            d.open = k < 4 ? 2 : 1
            d.messagesSent = Double(k * 7)
            d.messagesReceived = k == 2 ? .nan : 0.5 * Double(k)
            m.snapshots.append(
                Snapshot(
                    ts: t0 + Int64(k) * 1_000, statsTs: .nan, peerConnection: "pc\(k % 2)", source: "w3c", streams: [audio], pair: nil,
                    dataChannels: k == 5 ? nil : d))
        }
        let restored = try CallMaterial(decoding: m.encoded())
        XCTAssertEqual(ZstdDecoder.decompressAll(m.encoded()).0.first, 4)
        XCTAssertEqual(restored.snapshots.count, 6)
        for (a, b) in zip(restored.snapshots, m.snapshots) {
            XCTAssertEqual(a.dataChannels?.channels, b.dataChannels?.channels)
            XCTAssertEqual(a.dataChannels?.open, b.dataChannels?.open)
            XCTAssertEqual(a.dataChannels?.messagesSent.bitPattern, b.dataChannels?.messagesSent.bitPattern)
            XCTAssertEqual(a.dataChannels?.messagesReceived.bitPattern, b.dataChannels?.messagesReceived.bitPattern)
            XCTAssertEqual(a.streams[0].audioLevel.bitPattern, b.streams[0].audioLevel.bitPattern)
            XCTAssertEqual(a.streams[0].audioEnergy.bitPattern, b.streams[0].audioEnergy.bitPattern)
            XCTAssertEqual(a.streams[0].packets, b.streams[0].packets)
        }
        XCTAssertNil(restored.snapshots[5].dataChannels)
        XCTAssertEqual(restored.snapshots[3].streams[0].audioLevel, 0)
        XCTAssertTrue(restored.snapshots[2].dataChannels?.messagesReceived.isNaN ?? false)
    }

    /// Every number comes back with the same bits, whatever it is: counters that grow, fall or
    /// restart, −0, integers at and past 2^53, fractions, huge and tiny values, infinities;
    /// streams that come and go, two peer connections, strings of any length.
    func testLayout3KeepsEveryValueExactly() throws {
        var m = CallMaterial(callID: "exact")
        let specials: [Double] = [
            0, -0.0, 1, -1, 2, 9_007_199_254_740_991, 9_007_199_254_740_992, 9_007_199_254_740_994,
            -9_007_199_254_740_992, 0.1, 1e-300, 1e300, -1e300, .infinity, -.infinity, 123_456_789_012,
            4_294_967_295, 0.5, -0.5, 1.5e15, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
        ]
        var rng = SystemRandomNumberGenerator()
        let long = String(repeating: "é", count: 40_000)
        for k in 0..<60 {
            var streams: [StreamReading] = []
            for s in 0..<(1 + k % 4) {
                var r = StreamReading(
                    streamID: s == 3 ? long : "pc\(k % 2):stream:\(s)", direction: s % 2 == 0 ? .inbound : .outbound,
                    kind: s < 2 ? .audio : .video, ssrc: s == 1 ? .max : UInt32(s * 1000 + k % 3))
                r.codec = k % 5 == 0 ? nil : k % 4 < 2 ? "opus" : "PCMU"  // same length, different string at one place
                r.qualityLimitation = s == 2 ? ["none", "cpu", "bandwidth"][k % 3] : nil
                for (i, path) in StreamReading.numbers.enumerated() where (i + k + s) % 4 != 0 {
                    switch (i + k) % 3 {
                    case 0: r[keyPath: path] = Double(k * 1000 + i)  // a counter
                    case 1: r[keyPath: path] = specials[(i * 7 + k + s) % specials.count]
                    default: r[keyPath: path] = Double(Int64.random(in: -1 << 40...1 << 40, using: &rng)) / (k % 2 == 0 ? 1 : 8)
                    }
                }
                streams.append(r)
            }
            var pair: PairReading?
            if k % 3 != 0 {
                var p = PairReading()
                p.rttMs = specials[k % specials.count]
                p.localType = "host"; p.remoteType = k % 2 == 0 ? "relay" : nil; p.networkType = "wifi"
                pair = p
            }
            let ts = t0 + Int64(k) * (k % 7 == 0 ? -1_000 : 1_000)
            m.snapshots.append(
                Snapshot(
                    ts: ts, statsTs: k % 4 == 0 ? .nan : specials[(k * 3) % specials.count],
                    peerConnection: "pc\(k % 2)", source: k % 2 == 0 ? "w3c" : "goog", streams: streams, pair: pair))
        }
        m.events = [
            CallEvent(callID: "exact", ts: t0 + 5, kind: "event", action: "iceState", type: "connected", detailJSON: long),
            CallEvent(callID: "exact", ts: t0 - 7_000, kind: "quality", action: "quality", type: "", detailJSON: "{}"),
        ]
        let restored = try CallMaterial(decoding: m.encoded())
        XCTAssertEqual(restored.events, m.events)
        XCTAssertEqual(restored.snapshots.count, m.snapshots.count)
        for (a, b) in zip(restored.snapshots, m.snapshots) {
            XCTAssertEqual(a.ts, b.ts)
            XCTAssertEqual(a.statsTs.bitPattern, b.statsTs.bitPattern)
            XCTAssertEqual([a.peerConnection, a.source], [b.peerConnection, b.source])
            XCTAssertEqual(a.pair?.rttMs.bitPattern, b.pair?.rttMs.bitPattern)
            XCTAssertEqual(a.pair?.remoteType, b.pair?.remoteType)
            XCTAssertEqual(a.pair?.localType, b.pair?.localType)
            XCTAssertEqual(a.streams.count, b.streams.count)
            for (x, y) in zip(a.streams, b.streams) {
                XCTAssertEqual([x.streamID, x.codec, x.qualityLimitation], [y.streamID, y.codec, y.qualityLimitation])
                XCTAssertEqual(x.ssrc, y.ssrc)
                XCTAssertEqual(x.direction, y.direction)
                XCTAssertEqual(x.kind, y.kind)
                for (i, path) in StreamReading.numbers.enumerated() {
                    XCTAssertEqual(x[keyPath: path].bitPattern, y[keyPath: path].bitPattern, "snapshot \(a.ts) \(x.streamID.prefix(20)) field \(i)")
                }
            }
        }
    }

    /// Stored material restores exactly, and merging it with itself changes nothing.
    func testMaterialRoundTripAndIdempotentMerge() throws {
        var records: [LogRecord] = [
            .callInfo(
                call: "c5", ts: t0 - 1000, direction: "outgoing", sdk: "s", sdkVersion: "1",
                app: "a", appVersion: "2", platform: "ios", network: "wifi", media: ["audio"])
        ]
        var s = W3CSnapshot(t: Double(t0))
        for k in 0..<4 {
            s.t = Double(t0 + Int64(k) * 10_000); s.received += 500
            records.append(Harness.stats("c5", s, ts: t0 + Int64(k) * 10_000))
        }
        records.append(.quality(call: "c5", ts: t0 + 5_000, score: 80, source: "cisco-rem"))
        let m = try Harness.material(records)
        let restored = try CallMaterial(decoding: m.encoded())
        // Unmeasured fields are NaN (never equal to itself), so compare the stored form.
        XCTAssertEqual(restored.encoded(), m.encoded())
        XCTAssertEqual(restored.snapshots.count, 4)
        var doubled = m
        doubled.merge(restored)
        XCTAssertEqual(CallAnalyzer.analyze(doubled).call, CallAnalyzer.analyze(m).call)
        XCTAssertEqual(CallAnalyzer.analyze(m).call.sdkQualityMean, 80)
        XCTAssertEqual(CallAnalyzer.analyze(m).call.platform, "ios")
    }

    func testFieldBasesRowHoldsEveryStreamNumber() {
        XCTAssertEqual(FieldBases.width, StreamReading.numbers.count)
    }

    /// Bases are kept per row used, however large the string numbers that name the rows (stored
    /// material naming a huge one made room for every row below it), and numbers come back
    /// exactly through writer and reader.
    func testFieldBasesHoldOnlyTheRowsUsed() throws {
        let writes: [(row: Int, field: Int, value: Double)] = [
            (5_000_000, 0, 48_000), (3, 1, 100), (5_000_000, 1, 250), (3, 1, 90), (7, 26, 0.5), (5_000_000, 1, 260),
        ]
        var writer = FieldBases()
        let out = ByteWriter(capacity: 16)
        for w in writes { writer.write(w.value, row: w.row, field: w.field, to: out) }
        XCTAssertEqual(writer.rowCount, 3)
        var reader = FieldBases()
        var input = ByteReader(Array(out.written))
        for w in writes { XCTAssertEqual(try reader.read(&input, row: w.row, field: w.field), w.value) }
        XCTAssertEqual(reader.rowCount, 3)
        XCTAssertEqual(input.pos, input.bytes.count)
    }

    /// Damaged layout-3 material is refused with an error, never read wrong or crashed on.
    func testCutLayout3IsRefused() throws {
        let m = try Harness.material(Self.fixtureRecords(t0))
        let raw = ZstdDecoder.decompressAll(m.encoded()).0
        let compressor = ZstdCompressor(level: 1)
        for cut in stride(from: 1, to: raw.count, by: 7) {
            var bytes = [UInt8]()
            raw[..<cut].withUnsafeBytes { compressor.compress($0, .end, into: &bytes) }
            XCTAssertThrowsError(try CallMaterial(decoding: bytes), "cut at \(cut) of \(raw.count)")
        }
    }

    /// Damaged layout-3 bytes (bytes changed anywhere) are refused or read as some material, and
    /// what is read analyses without trapping.
    func testChangedLayout3BytesNeverTrap() throws {
        let m = try Harness.material(Self.fixtureRecords(t0))
        let raw = ZstdDecoder.decompressAll(m.encoded()).0
        let compressor = ZstdCompressor(level: 1)
        var rng = SplitMix64(seed: 7)
        var read = 0
        for _ in 0..<3_000 {
            var bytes = raw
            for _ in 0...(rng.next() % 3) {
                let at = Int(rng.next() % UInt64(bytes.count - 1)) + 1  // the layout byte kept
                bytes[at] = UInt8(truncatingIfNeeded: rng.next())
            }
            var compressed = [UInt8]()
            bytes.withUnsafeBytes { compressor.compress($0, .end, into: &compressed) }
            guard let damaged = try? CallMaterial(decoding: compressed) else { continue }
            read += 1
            _ = CallAnalyzer.analyze(damaged)
        }
        XCTAssertGreaterThan(read, 100, "some changes leave a readable layout (numbers, text)")
    }

    static func fixtureRecords(_ t0: Int64) -> [LogRecord] {
        var records: [LogRecord] = [
            .callInfo(
                call: "m1", ts: t0 - 1000, direction: "outgoing", sdk: "s", sdkVersion: "1",
                app: "a", appVersion: "2", platform: "ios", network: "wifi", media: ["audio"])
        ]
        var s = W3CSnapshot(t: Double(t0))
        for k in 0..<5 {
            s.t = Double(t0 + Int64(k) * 10_000) + 0.25
            s.received += 480 + Double(k); s.lost += Double(k % 2); s.jitter = 0.004 + Double(k) / 1000
            s.samples += 480_000; s.concealed += 1200; s.events += 2; s.jbDelay += 28.8; s.jbEmitted += 480_000
            s.sent += 500; s.rtt = 0.05 + Double(k) / 100; s.rttTotal += 0.5; s.rttCount += 10
            records.append(Harness.stats("m1", s, ts: t0 + Int64(k) * 10_000))
        }
        records.append(.quality(call: "m1", ts: t0 + 5_000, score: 80, source: "cisco-rem"))
        records.append(
            LogRecord(
                kind: .event, call: "m1", ts: t0 + 1_000,
                body: ["action": "iceState", "type": "connected", "note": "say \"hi\"\n", "ms": 12.5]))
        records.append(LogRecord(kind: .end, call: "m1", ts: t0 + 50_000, body: ["reason": "hangup", "statusCode": 200]))
        return records
    }

    /// `fixtureRecords`' material as layout 2 stored it (zstd-compressed), in hex.
    static let layout2Fixture = [
        "28b52ffd64cb076d1a00c42602500200007b2263616c6c223a226d31222c22696e666f223a7b22646972656374696f6e",
        "223a226f7574676f696e67222c2273646b223a22735665727331222c22617070223a226132222c22706c6174666f726d",
        "223a22696f73222c226e6574776f726b223a2277696669222c226d65646961223a5b22617564696f225d7d5473223a31",
        "37393439303030656e64223a7b227265617368616e677570222c22737461747573436f6465223a3230307d3530303030",
        "2c2266697273746c612c226f74686572223a302c226576656e7473223a5b5b30357175616c697479223830222c227b5c",
        "2273636f72655c223a38302c5c5c223a5c22696e626f756e645c222c5c22736f75726365636973636f2d72656d5c227d",
        "225d2c31222c226963655374617465222c22636f6e6e65637465646e6f74736179205c5c5c2268695c5c5c225c5c6e6d",
        "735c223a31322e3535306e6422222c7b5c5c225d5d7d05000000005e56eea10100000004e065e51e7a42030070633003",
        "007733630100494005007372666c780400686f73740300756470ffff0400776966690200000016007063303a3a3a3131",
        "31310000570400000a002f6f707573ffffff03800370e740007ec0e210c092404c1d41000040cdcccccccccc3c404900",
        "e03f2440176f7574323232320100ae081f00407f88e3004910855168088ec5f2f03f14a22d104c2d41014ef0348ff320",
        "acc26a8c962ffc1820acf93518409a999999999955805100f83f003e70974cfd30d3336d189ecf024100401cc0b24c3d",
        "205c5444409f88034100540040444040faa46fd4a289072070b7804f42240000624080560400004988a36a0880560440",
        "00000000000049407da89134141a0944264c50908266180310039912e5011240d03951c8942109482698201394ff6b1d",
        "8a0c056c32ce643788114d587a22027f0ea087474c6636d13378a7febdd17069d38f23d33e684d2282e68b7ca5d9c4cd",
        "a7f90d78204b09c8a3a309e22a0e0c6510c1b2110822b8c51f942611492bc26f997083de9c366ede7968b6b22d4e6398",
        "39abfe7708e69d552d86dcf0c34e25b0ba28e0124916030e984b0811df7dd6e0d1fe27d12d10f0455549ca8d58bfb73c",
        "6742c2a394c11a446336f91d3f08ab908b7d4c8b37b3f7b10194bf46579d153dc812ca2cdd570123959dbd",
    ]

    /// `fixtureRecords`' material as layout 3 stored it (written by `analyze` of a release that
    /// stored layout 3, zstd-compressed), in hex.
    static let layout3Fixture = [
        "28b52ffd642803851600c425033e0100007b2263616c6c223a226d31222c22696e666f223a7b22646972656374696f6e",
        "223a226f7574676f696e67222c2273646b223a22735665727331222c22617070223a226132222c22706c6174666f726d",
        "223a22696f73222c226e6574776f726b223a2277696669222c226d65646961223a5b22617564696f225d7d5473223a31",
        "37393439303030656e64223a7b227265617368616e677570222c22737461747573436f6465223a3230307d3530303030",
        "2c2266697273746c612c226f74686572223a307d03d087b3e5bd6801056576656e74010869636553746174650109636f",
        "6e6e6563746564217b226e6f7465223a22736179205c2268695c225c6e222c226d73223a31322e357dc03e0107717561",
        "6c6974790501023830377b2273636f7265223a38302c696e626f756e64222c22736f75726365223a22636973636f2d72",
        "656d227d90bf050103656e6407010668616e677570127b0580f8b2e5bd680103706330010004e065e51e7a4201037733",
        "6301c80101057372666c780104686f73740103756470000104776966690201167063303a3a3a3131313100d708010a2f",
        "6f70757300ff87801c80dc0b800f80b0090010c0258098750801cdcccccccccc3c40809875c8010100e03f2801177063",
        "303a6f75743232323201ae1110009f80d00f80e2090010a09c01090100045168e51e7a420a01000b0c0d000e020f00d7",
        "081000840fc0b20904044c408098754e400428110000c26a880f80b509009a999999999955408098755000f83f336d8c",
        "0fc0b709045c40809875282804a46f900f80ba0900c00480987528044028010000000000000440283020800221aab303",
        "240c3317660580abbcf8075a45c300a2045017c6e0341e89440160191700f1cc3143531e72f602bef80017def36eda7a",
        "6c70126945483a3597b580d90e009977eb980be0226503b88bb472c8350308259821771b9817a697963fe5e8ca6bd858",
        "df5ec5982547ce0e060a10e34ea1",
    ]
}
