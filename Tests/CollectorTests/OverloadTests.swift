import CallLog
@testable import Collector
import Foundation
import XCTest

/// A thousand calls at once, snapshots arriving while the disk takes nothing: memory stays
/// at the queue's bound, the oldest snapshots are the ones dropped, every loss is counted
/// and reported, and no call loses its `call` or `end` record.
final class OverloadTests: XCTestCase {
    static let calls = 1_000
    static let ticks = 25

    /// A W3C report as the Kandy Mobile SDK hands it: a fresh ~2 KB string on every call.
    static func json(call: Int, tick: Int) -> String {
        var parts = [String]()
        for i in 0..<12 {
            parts.append(
                #"{"id":"IT\#(i)A\#(call)","timestamp":\#(1_795_349_930_000 + tick * 1000),"type":"inbound-rtp","kind":"audio","ssrc":\#(3_000_000 + call * 31 + i),"packetsReceived":\#(tick * 50 + i),"packetsLost":\#(tick % 7),"jitter":0.00\#(i % 10),"bytesReceived":\#(tick * 4000 + call),"tick":\#(tick)}"#
            )
        }
        return "[" + parts.joined(separator: ",") + "]"
    }

    func testThousandCallsFasterThanTheDiskStayBounded() throws {
        let dir = Logs.directory()
        let clock = ManualClock()
        let storage = FaultyStorage()
        var config = Logs.configuration(dir)
        config.interval = 1
        config.queueBytes = 6 << 20
        config.retryInterval = 60  // no housekeeping tick during the 25 s of this test
        config.fileBytes = 64 << 20
        config.diskCap = 1 << 30
        let agent = CallStatsAgent(configuration: config, clock: clock, storage: storage)
        let t0 = clock.now()

        var recorders = [CallRecorder]()
        for c in 0..<Self.calls {
            let tick = Counter()
            recorders.append(
                agent.attach(
                    callID: "call-\(c)", info: CallInfo(direction: .outgoing, sdk: "kandy-mobile", sdkVersion: "5.14.0"),
                    call: KandyMobileCall { done in done(Self.json(call: c, tick: tick.next() + 1)) }))
        }
        // The disk stops taking data; the writer takes the call records and waits in its flush.
        storage.hold()
        let deadline = Date().addingTimeInterval(20)
        while storage.blocked == 0 && Date() < deadline { usleep(5_000) }
        XCTAssertEqual(storage.blocked, 1)

        let rssBefore = Self.residentBytes()
        var rssPeak = rssBefore
        for _ in 0..<Self.ticks {
            clock.advance(by: 1_000)  // a snapshot of every call
            rssPeak = max(rssPeak, Self.residentBytes())
        }
        for r in recorders { r.end(CallEnd(reason: .terminatedLocally, statusCode: 9901)) }
        while agent.attachedCalls > 0 && Date() < deadline.addingTimeInterval(20) { usleep(5_000) }
        usleep(100_000)  // the last of the final samples reach the queue
        let produced = Self.calls * (Self.ticks + 1)
        let itemBytes = Self.json(call: 0, tick: 1).utf8.count + 128
        let c = agent.counters
        XCTAssertLessThanOrEqual(c.queuePeakBytes, config.queueBytes + itemBytes, "the queue never holds more than its bound")
        XCTAssertGreaterThan(c.dropped[.queueFull] ?? 0, produced / 2, "most of \(produced) snapshots of \(itemBytes) B cannot fit in 6 MiB")
        // 50 MB of snapshots went by; memory grew by about the queue's bound, not by that.
        if rssBefore > 0 {
            XCTAssertLessThan(rssPeak - rssBefore, 30 << 20, "resident memory grew by \((rssPeak - rssBefore) >> 20) MiB")
        }
        storage.release()
        agent.shutdown()

        let records = Logs.records(dir)
        let stats = records.filter { $0.kind == .stats }
        XCTAssertEqual(records.filter { $0.kind == .call }.count, Self.calls)
        XCTAssertEqual(records.filter { $0.kind == .end }.count, Self.calls, "ends are never dropped while snapshots can go")
        XCTAssertEqual(stats.count + (agent.counters.dropped[.queueFull] ?? 0), produced, "every snapshot is written or counted")
        let reported = records.filter { $0.kind == .agent }.compactMap { $0["reasons"]?["queueFull"]?.int64Value }.reduce(0, +)
        XCTAssertEqual(Int(reported), agent.counters.dropped[.queueFull], "the agent records report every drop")

        // The survivors are the newest: all last samples, all of the last regular tick, part
        // of one tick before it, and nothing older.
        var perTick = [Int: Int]()
        for s in stats { perTick[Int(s["report"]!.arrayValue![0]["tick"]!.int64Value!), default: 0] += 1 }
        XCTAssertEqual(perTick[Self.ticks + 1], Self.calls, "every call's last sample")
        XCTAssertEqual(perTick[Self.ticks], Self.calls)
        let oldestKept = try XCTUnwrap(perTick.keys.min())
        for t in oldestKept...(Self.ticks + 1) where t > oldestKept {
            XCTAssertEqual(perTick[t], Self.calls, "tick \(t): only the oldest kept tick may be partial")
        }
        XCTAssertGreaterThan(oldestKept, 1)
        // Per call, snapshots are written in order.
        var last = [String: Int64]()
        var ordered = true
        for s in stats {
            let tick = s["report"]!.arrayValue![0]["tick"]!.int64Value!
            ordered = ordered && tick > last[s.call, default: 0] && s.ts >= t0
            last[s.call] = tick
        }
        XCTAssertTrue(ordered)
    }

    /// Resident set size from /proc (0 where it is not available).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
