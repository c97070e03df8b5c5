import CallLog
import Capture
import Foundation
import TestSupport
import XCTest

/// A flood of one-packet RTP streams (fresh SSRCs, as anyone who can send UDP can make) past
/// the stream cap: each eviction costs one stream looked at, not a scan of every open stream,
/// and the real calls' streams come out as they would without the flood.
final class StreamFloodTests: XCTestCase {
    static let t0: Int64 = 1_700_000_000_000_000_000
    static let ms: Int64 = 1_000_000
    static let floodStreams = 120_000
    static let realPackets = 500

    static let realStreams: [(from: String, fromPort: UInt16, to: String, toPort: UInt16, ssrc: UInt32)] = [
        ("10.0.0.1", 40000, "10.0.0.2", 50000, 0x1111_1111),
        ("10.0.0.2", 50000, "10.0.0.1", 40000, 0x2222_2222),
        ("10.0.0.3", 30000, "10.0.0.4", 30002, 0x3333_3333),
    ]

    /// The real streams (a packet each every 20 ms for 10 s) and, spread over the same 10 s,
    /// `flood` streams of one packet each.
    static func capture(flood: Int) -> PcapWriter {
        var w = PcapWriter()
        let span = Int64(realPackets) * 20 * ms
        var nextFlood = 0
        func addFlood(until t: Int64) {
            while nextFlood < flood, t0 + span * Int64(nextFlood) / Int64(flood) <= t {
                let ssrc = UInt32(0x5000_0000 + nextFlood)
                w.addUDP(
                    from: "10.9.0.1", 7000, to: "10.9.0.2", 7002,
                    payload: PcapPayloads.rtp(seq: UInt16(truncatingIfNeeded: nextFlood), timestamp: 0, ssrc: ssrc, payloadSize: 40),
                    timestampNanos: t0 + span * Int64(nextFlood) / Int64(flood))
                nextFlood += 1
            }
        }
        for k in 0..<realPackets {
            for (i, s) in realStreams.enumerated() {
                let t = t0 + Int64(k) * 20 * ms + Int64(i) * 3 * ms
                addFlood(until: t)
                w.addUDP(
                    from: s.from, s.fromPort, to: s.to, s.toPort,
                    payload: PcapPayloads.rtp(seq: UInt16(k), timestamp: UInt32(k * 160), ssrc: s.ssrc),
                    timestampNanos: t)
            }
        }
        addFlood(until: .max)
        return w
    }

    struct Run {
        var session: CaptureSession
        var records: [LogRecord]
    }

    func run(_ w: PcapWriter) throws -> Run {
        var c = CaptureConfiguration()
        c.keepsClosedStreams = true
        let box = RecordCollector()
        var s = CaptureSession(configuration: c) { box.records.append($0) }
        try PcapSource.open(bytes: w.bytes).feed(&s)
        s.finish()
        return Run(session: s, records: box.records)
    }

    /// The real streams' figures and every record of their calls, as text, sorted (`finish()`
    /// closes the streams still open in the order of a hash table).
    func realStreamsOutput(_ run: Run) -> [String] {
        let ssrcs = Set(Self.realStreams.map(\.ssrc))
        let real = run.session.closedStreams.filter { ssrcs.contains($0.key.ssrc) }.sorted { $0.key.ssrc < $1.key.ssrc }
        let calls = Set(real.map(\.call))
        return real.map { "\($0.key) \($0.call) \($0.payloadTypes) \(String(describing: $0.codec)) \($0.statistics)" }
            + run.records.filter { calls.contains($0.call) }.map(\.jsonLine).sorted()
    }

    func testAFloodOfStreamsCostsOneLookPerEvictionAndLeavesRealStreamsAsTheyWere() throws {
        let quiet = try run(Self.capture(flood: 0))
        XCTAssertEqual(quiet.session.counters.streamsEvicted, 0)
        let flooded = try run(Self.capture(flood: Self.floodStreams))

        let cap = CaptureConfiguration().maximumStreams
        let counters = flooded.session.counters
        XCTAssertEqual(counters.streamsOpened, Self.floodStreams + Self.realStreams.count)
        XCTAssertEqual(counters.streamsEvicted, counters.streamsOpened - cap, "every stream past the cap evicts one")
        XCTAssertLessThanOrEqual(
            flooded.session.streamsExaminedForEviction, counters.streamsEvicted,
            "streams looked at to choose those evicted")

        let expected = realStreamsOutput(quiet)
        XCTAssertEqual(expected.count, Self.realStreams.count + quiet.records.count)
        XCTAssertEqual(realStreamsOutput(flooded), expected)
        XCTAssertTrue(
            flooded.session.closedStreams.filter { Set(Self.realStreams.map(\.ssrc)).contains($0.key.ssrc) }
                .allSatisfy { $0.statistics.packets == Self.realPackets })
    }

    /// Past the cap the stream evicted is the one whose last packet is the oldest, whatever
    /// order the streams were opened in.
    func testTheStreamEvictedIsTheLeastRecentlyActive() throws {
        var w = PcapWriter()
        func packet(_ port: UInt16, _ seq: UInt16, at ms: Int64) {
            w.addUDP(
                from: "10.0.0.1", port, to: "10.0.0.2", 9000, payload: PcapPayloads.rtp(seq: seq, timestamp: UInt32(seq) * 160, ssrc: UInt32(port)),
                timestampNanos: Self.t0 + ms * Self.ms)
        }
        // Streams 1, 2, 3 open; 1 and 3 are heard again; 4 arrives past a cap of 3: 2 goes.
        packet(1, 0, at: 0); packet(2, 0, at: 20); packet(3, 0, at: 40)
        packet(1, 1, at: 60); packet(3, 1, at: 80)
        packet(4, 0, at: 100)
        // Then 5: the oldest is now 1 (60 ms).
        packet(5, 0, at: 120)
        var c = CaptureConfiguration()
        c.keepsClosedStreams = true
        c.maximumStreams = 3
        var s = CaptureSession(configuration: c) { _ in }
        try PcapSource.open(bytes: w.bytes).feed(&s)
        XCTAssertEqual(s.closedStreams.map(\.key.ssrc), [2, 1])
        XCTAssertEqual(s.counters.streamsEvicted, 2)
        XCTAssertEqual(s.activeStreamCount, 3)
    }
}
