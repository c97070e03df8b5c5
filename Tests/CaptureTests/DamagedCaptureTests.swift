import CallLog
import Capture
import Foundation
import TestSupport
import XCTest

/// Damaged capture files keep every whole packet: a cut last record, an impossible record
/// length, a pcapng packet on an interface never described, broken timestamps and a snaplen
/// that cuts headers. Each run ends with the open streams closed, so their final `rtp`, `ice`
/// and `end` records are written, and the damage is said (record number and byte offset).
final class DamagedCaptureTests: XCTestCase {
    static let t0: Int64 = 1_700_000_000_000_000_000
    static let ms: Int64 = 1_000_000

    struct Run {
        var records: [LogRecord]
        var streams: [StreamKey: RTPStreamSummary]
        var counters: CaptureCounters
        var damage: [PcapDamage]
        var stop: PcapSource.Stop
        var firstImplausible: (frame: Int, nanos: Int64)?
    }

    func run(_ bytes: [UInt8], maxFrames: Int = .max) throws -> Run {
        var c = CaptureConfiguration()
        c.keepsClosedStreams = true
        let box = RecordCollector()
        var s = CaptureSession(configuration: c) { box.records.append($0) }
        let source = try PcapSource.open(bytes: bytes)
        let stop = try source.feed(&s, maxFrames: maxFrames)
        s.finish()
        return Run(
            records: box.records, streams: Dictionary(s.closedStreams.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a }),
            counters: s.counters, damage: source.damage, stop: stop, firstImplausible: s.firstImplausibleTimestamp)
    }

    /// Where each record of a little-endian classic pcap starts.
    static func recordOffsets(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var at = 24
        while at + 16 <= bytes.count {
            offsets.append(at)
            let caplen = Int(bytes[at + 8]) | Int(bytes[at + 9]) << 8 | Int(bytes[at + 10]) << 16 | Int(bytes[at + 11]) << 24
            at += 16 + caplen
        }
        return offsets
    }

    /// A stream of `count` PCMU packets every 20 ms from t0.
    static func stream(_ count: Int, into w: inout PcapWriter, stamp: (Int) -> Int64 = { t0 + Int64($0) * 20 * ms }) {
        for i in 0..<count {
            w.addUDP(
                from: "10.0.0.1", 40000, to: "10.0.0.2", 50000,
                payload: PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: 0xABCD), timestampNanos: stamp(i))
        }
    }

    static let key = StreamKey(
        flow: FlowKey(source: Endpoint(address: IPAddress("10.0.0.1")!, port: 40000), destination: Endpoint(address: IPAddress("10.0.0.2")!, port: 50000)),
        ssrc: 0xABCD)

    /// teams.pcap cut 7 bytes before its end: its last record is unreadable, and everything
    /// before it is measured exactly as the whole file read up to that record.
    func testCutLastRecordKeepsEveryWholePacket() throws {
        let url = try SharedCaptures.requireDirectory().appendingPathComponent("ndpi/teams.pcap")
        let whole = [UInt8](try Data(contentsOf: url))
        let offsets = Self.recordOffsets(whole)
        let cut = Array(whole.dropLast(7))

        let damaged = try run(cut)
        let expected = try run(whole, maxFrames: offsets.count - 1)
        let all = try run(whole)
        XCTAssertEqual(damaged.stop, .damaged)
        XCTAssertEqual(
            damaged.damage.map { [$0.record, $0.byteOffset] }, [[offsets.count, offsets.last!]], "\(damaged.damage)")
        XCTAssertEqual(damaged.damage.first?.resumed, false)
        XCTAssertEqual(damaged.counters.frames, offsets.count - 1)
        // The same records; the closing ones of different calls come in no fixed order.
        XCTAssertEqual(damaged.records.map { "\($0)" }.sorted(), expected.records.map { "\($0)" }.sorted())
        XCTAssertEqual(damaged.streams.mapValues(\.statistics.packets), expected.streams.mapValues(\.statistics.packets))
        // The whole file's 19 records; the cut one keeps as many, its last packet being no
        // interval's or stream's last word.
        XCTAssertEqual(all.records.count, 19)
        XCTAssertEqual(damaged.records.count, 19)
        for kind in [LogRecord.Kind.rtpStream, .ice, .end] {
            XCTAssertTrue(damaged.records.contains { $0.kind == kind }, "no \(kind) record")
        }
        XCTAssertEqual(damaged.records.filter { $0.kind == .rtpStream }.count, all.records.filter { $0.kind == .rtpStream }.count)
    }

    /// A record header claiming 2³¹ bytes after 3,000 good packets: those 3,000 are measured,
    /// the streams closed, and the packet after it is not read (the next header cannot be found).
    func testImpossibleRecordLengthStopsReadingAndKeepsWhatCameBefore() throws {
        var good = PcapWriter()
        Self.stream(3_000, into: &good)
        var bytes = good.bytes
        let offset = bytes.count
        bytes += PcapBytes.le32(UInt32(Self.t0 / 1_000_000_000) + 61) + PcapBytes.le32(0)
        bytes += PcapBytes.le32(1 << 31) + PcapBytes.le32(1 << 31)
        var after = PcapWriter()
        Self.stream(10, into: &after) { Self.t0 + 61_000 * Self.ms + Int64($0) * 20 * Self.ms }
        bytes += after.bytes.dropFirst(24)

        let damaged = try run(bytes)
        let expected = try run(good.bytes)
        XCTAssertEqual(damaged.stop, .damaged)
        XCTAssertEqual(damaged.damage.map { [$0.record, $0.byteOffset] }, [[3_001, offset]])
        XCTAssertTrue(damaged.damage[0].message.contains("2147483648"), damaged.damage[0].message)
        XCTAssertEqual(damaged.streams[Self.key]?.statistics.packets, 3_000)
        XCTAssertEqual(damaged.streams[Self.key]?.statistics.lost, 0)
        XCTAssertEqual(damaged.records, expected.records)
        XCTAssertTrue(damaged.records.contains { $0.kind == .end })
    }

    /// A pcapng enhanced packet block naming interface 5 of a file that describes only
    /// interface 0: the block is skipped and reading goes on at the next one.
    func testPcapngPacketOnAnUndescribedInterfaceIsSkipped() throws {
        var frames = PcapWriter()
        Self.stream(40, into: &frames)
        let offsets = Self.recordOffsets(frames.bytes)
        func frame(_ i: Int) -> [UInt8] {
            let at = offsets[i]
            let caplen = Int(frames.bytes[at + 8]) | Int(frames.bytes[at + 9]) << 8
            return Array(frames.bytes[(at + 16)..<(at + 16 + caplen)])
        }
        func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
            var b = body
            while b.count % 4 != 0 { b.append(0) }
            let length = UInt32(12 + b.count)
            return PcapBytes.le32(type) + PcapBytes.le32(length) + b + PcapBytes.le32(length)
        }
        func epb(interface: UInt32, _ i: Int) -> [UInt8] {
            let micros = UInt64((Self.t0 + Int64(i) * 20 * Self.ms) / 1_000)
            let f = frame(i)
            return block(
                6,
                PcapBytes.le32(interface) + PcapBytes.le32(UInt32(micros >> 32)) + PcapBytes.le32(UInt32(micros & 0xFFFF_FFFF))
                    + PcapBytes.le32(UInt32(f.count)) + PcapBytes.le32(UInt32(f.count)) + f)
        }
        let header =
            block(0x0A0D_0D0A, PcapBytes.le32(0x1A2B_3C4D) + PcapBytes.le16(1) + PcapBytes.le16(0) + [UInt8](repeating: 0xFF, count: 8))
            + block(1, PcapBytes.le16(1) + PcapBytes.le16(0) + PcapBytes.le32(0))
        var clean = header
        var odd = header
        for i in 0..<40 {
            clean += epb(interface: 0, i)
            odd += epb(interface: 0, i)
            // A copy of packet 20 on an interface never described, right after it.
            if i == 20 { odd += epb(interface: 5, i) }
        }
        let badOffset = header.count + (0...20).map { epb(interface: 0, $0).count }.reduce(0, +)

        let damaged = try run(odd)
        let expected = try run(clean)
        XCTAssertEqual(expected.streams[Self.key]?.statistics.packets, 40)
        XCTAssertEqual(damaged.stop, .endOfFile)
        XCTAssertEqual(damaged.damage.map { [$0.record, $0.byteOffset] }, [[22, badOffset]])
        XCTAssertEqual(damaged.damage.first?.resumed, true)
        XCTAssertEqual(damaged.counters.frames, 40)
        XCTAssertEqual(damaged.records, expected.records)
    }

    /// One packet stamped 0, then one stamped 2³²−1 seconds, inside a one-second stream: it is
    /// counted and measured at the latest good time, so every record stays inside the call.
    func testTimestampsThatJumpDecadesAreNotTheCallsTimes() throws {
        for broken: Int64 in [0, Int64(UInt32.max) * 1_000_000_000] {
            var w = PcapWriter()
            Self.stream(50, into: &w) { $0 == 25 ? broken : Self.t0 + Int64($0) * 20 * Self.ms }
            let r = try run(w.bytes)
            XCTAssertEqual(r.counters.implausibleTimestamps, 1)
            XCTAssertEqual(r.firstImplausible?.frame, 26)
            // libpcap reads a classic record's seconds as signed: 2³²−1 arrives as −1 s.
            XCTAssertEqual(r.firstImplausible?.nanos, broken == 0 ? 0 : -1_000_000_000)
            XCTAssertEqual(r.streams[Self.key]?.statistics.packets, 50)
            XCTAssertEqual(r.streams[Self.key]?.statistics.lost, 0)
            XCTAssertEqual(r.streams.count, 1)
            let times = r.records.map(\.ts)
            XCTAssertGreaterThanOrEqual(times.min() ?? 0, Self.t0 / Self.ms, "\(times)")
            XCTAssertLessThanOrEqual(times.max() ?? 0, Self.t0 / Self.ms + 60_000, "\(times)")
        }
        // The same stamps on the capture's first two frames: held until the first real time,
        // and measured at it.
        for broken: Int64 in [0, Int64(UInt32.max) * 1_000_000_000] {
            var w = PcapWriter()
            Self.stream(50, into: &w) { $0 < 2 ? broken : Self.t0 + Int64($0) * 20 * Self.ms }
            let r = try run(w.bytes)
            XCTAssertEqual(r.counters.implausibleTimestamps, 2)
            XCTAssertEqual(r.firstImplausible?.frame, 1)
            XCTAssertEqual(r.counters.frames, 50)
            XCTAssertEqual(r.streams[Self.key]?.statistics.packets, 50)
            let times = r.records.map(\.ts)
            XCTAssertGreaterThanOrEqual(times.min() ?? 0, Self.t0 / Self.ms, "\(times)")
            XCTAssertLessThanOrEqual(times.max() ?? 0, Self.t0 / Self.ms + 60_000, "\(times)")
        }
        // A capture stamped wholly in 1970's first day (a device without a clock) is its own.
        var clockless = PcapWriter()
        Self.stream(100, into: &clockless) { 5 * Self.ms + Int64($0) * 20 * Self.ms }
        let fromBoot = try run(clockless.bytes)
        XCTAssertEqual(fromBoot.counters.implausibleTimestamps, 0)
        XCTAssertEqual(fromBoot.streams[Self.key]?.statistics.packets, 100)
        XCTAssertEqual(fromBoot.streams[Self.key]?.statistics.lost, 0)
        XCTAssertLessThan(fromBoot.records.map(\.ts).max() ?? .max, 60_000, "the capture's own times, from boot")
        // Times a little out of order (merged interfaces), and a jump of six years (recordings
        // merged into one file, as in the shared captures), are the capture's own.
        var w = PcapWriter()
        Self.stream(50, into: &w) {
            Self.t0 + Int64($0) * 20 * Self.ms - ($0 % 2 == 1 ? 30 * Self.ms : 0) + ($0 >= 40 ? 6 * 365 * 86_400_000 * Self.ms : 0)
        }
        XCTAssertEqual(try run(w.bytes).counters.implausibleTimestamps, 0)
    }

    /// A classic pcap with every record cut to `snap` bytes and the header saying so.
    static func snapped(_ bytes: [UInt8], to snap: Int) -> [UInt8] {
        var out = Array(bytes[0..<16]) + PcapBytes.le32(UInt32(snap)) + Array(bytes[20..<24])
        for at in recordOffsets(bytes) {
            let caplen = Int(bytes[at + 8]) | Int(bytes[at + 9]) << 8
            let kept = min(caplen, snap)
            out += Array(bytes[at..<(at + 8)]) + PcapBytes.le32(UInt32(kept)) + Array(bytes[(at + 12)..<(at + 16)])
            out += Array(bytes[(at + 16)..<(at + 16 + kept)])
        }
        return out
    }

    /// Snaplen 30 cuts every packet inside its IP header: all 100 are counted as cut, none
    /// measured. Snaplen 54 keeps Ethernet, IPv4, UDP and the RTP header: nothing is cut that
    /// the measurement needs, and the stream is whole.
    func testSnaplenCuttingHeadersIsCounted() throws {
        var w = PcapWriter()
        Self.stream(100, into: &w)
        let thirty = try run(Self.snapped(w.bytes, to: 30))
        XCTAssertEqual(thirty.counters.framesCutInHeaders, 100)
        XCTAssertEqual(thirty.counters.frames, 100)
        XCTAssertEqual(thirty.counters.streamsOpened, 0)
        XCTAssertEqual(try PcapSource.open(bytes: Self.snapped(w.bytes, to: 30)).snapLength, 30)
        let one = try run(Self.snapped(w.bytes, to: 1))
        XCTAssertEqual(one.counters.framesCutInHeaders, 100)

        let headers = try run(Self.snapped(w.bytes, to: 54))
        XCTAssertEqual(headers.counters.framesCutInHeaders, 0)
        XCTAssertEqual(headers.streams[Self.key]?.statistics.packets, 100)
    }
}
