import CallLog
@testable import Collector
import Foundation
import XCTest

/// Sampling cadence, the order of a call's last records, and the agent's treatment of slow
/// or silent SDKs, on a manual clock (and once on the real one).
final class AgentTests: XCTestCase {
    static func snapshot(_ n: Int) -> StatsSnapshot {
        .report(
            [["id": "IT01A", "type": "inbound-rtp", "timestamp": .number(Double(n)), "packetsReceived": .number(Double(50 * n))]],
            format: .w3c)
    }

    func testSamplesEveryIntervalThenLastSampleEndAndFsync() throws {
        let dir = Logs.directory()
        let clock = ManualClock()
        let t0 = clock.now()
        let storage = FaultyStorage()
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: storage)
        let n = Counter()
        let recorder = agent.attach(
            callID: "c-1", info: CallInfo(direction: .outgoing, sdk: "kandy-mobile", sdkVersion: "5.14.0", media: ["audio", "video"]),
            call: FakeCall { Self.snapshot(n.next()) })
        clock.advance(by: 35_000)
        XCTAssertEqual(n.value, 3, "one sample per 10 s, the first one interval after attach")
        recorder.event(SDKEvent(action: "callMetric", type: "callAnswerReceived", time: t0 + 1_500))
        recorder.state(.hold)
        recorder.end(CallEnd(reason: .terminatedLocally, statusCode: 9901, statusText: "Ended by local user", durationMs: 35_000))
        recorder.event(SDKEvent(action: "iceState", type: "iceDisconnected"))  // after the end: ignored

        // The end is made durable by the writer itself, without anyone calling flush().
        let deadline = Date().addingTimeInterval(10)
        while storage.syncs == 0 && Date() < deadline { usleep(10_000) }
        XCTAssertGreaterThanOrEqual(storage.syncs, 1, "the end record is followed by flush + fsync")
        let records = Logs.records(dir)
        XCTAssertEqual(records.map(\.kind.rawValue), ["call", "stats", "stats", "stats", "event", "event", "stats", "end"])
        XCTAssertEqual(records.filter { $0.kind == .stats }.map(\.ts), [t0 + 10_000, t0 + 20_000, t0 + 30_000, t0 + 35_000])
        XCTAssertEqual(records[0]["sdk"], "kandy-mobile")
        XCTAssertEqual(records[0]["app"], "test-app")
        XCTAssertEqual(records[0]["media"], ["audio", "video"])
        XCTAssertEqual(records[4].ts, t0 + 1_500, "the SDK's own time is kept")
        XCTAssertEqual(records[5]["type"], "hold")
        XCTAssertEqual(records[6]["report"]?.arrayValue?.first?["timestamp"], 3, "the last sample is taken at the end")
        XCTAssertEqual(records[7]["statusCode"], 9901)
        XCTAssertEqual(records[7]["reason"], "terminatedLocally")
        XCTAssertEqual(agent.attachedCalls, 0)
        agent.shutdown()
    }

    func testConfigurableIntervalAndSeveralCalls() {
        let dir = Logs.directory()
        let clock = ManualClock()
        var config = Logs.configuration(dir)
        config.interval = 2.5
        let agent = CallStatsAgent(configuration: config, clock: clock, storage: FileStorage())
        let a = Counter(), b = Counter()
        let ra = agent.attach(callID: "a", info: CallInfo(direction: .incoming, sdk: "s", sdkVersion: "1"), call: FakeCall { Self.snapshot(a.next()) })
        clock.advance(by: 1_000)
        let rb = agent.attach(callID: "b", info: CallInfo(direction: .incoming, sdk: "s", sdkVersion: "1"), call: FakeCall { Self.snapshot(b.next()) })
        clock.advance(by: 9_000)
        XCTAssertEqual(a.value, 4, "a: 2.5, 5, 7.5, 10 s")
        XCTAssertEqual(b.value, 3, "b: 3.5, 6, 8.5 s")
        ra.end(CallEnd(reason: .terminatedRemotely))
        rb.end(CallEnd(reason: .terminatedRemotely))
        agent.flush()
        let stats = Logs.records(dir).filter { $0.kind == .stats }
        XCTAssertEqual(stats.filter { $0.call == "a" }.count, 5)
        XCTAssertEqual(stats.filter { $0.call == "b" }.count, 4)
        agent.shutdown()
    }

    /// An SDK that has not answered the previous fetch is not asked again: ticks are skipped
    /// (counted), and the answer, when it comes, is written.
    func testSlowFetchSkipsTicks() {
        let dir = Logs.directory()
        let clock = ManualClock()
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: FileStorage())
        let pending = Pending()
        let r = agent.attach(callID: "slow", info: CallInfo(direction: .outgoing, sdk: "s", sdkVersion: "1"), call: pending)
        clock.advance(by: 30_000)
        XCTAssertEqual(pending.calls, 1)
        XCTAssertEqual(agent.counters.samplesSkipped, 2)
        pending.complete(Self.snapshot(7))
        clock.advance(by: 10_000)
        XCTAssertEqual(pending.calls, 2)
        pending.complete(Self.snapshot(8))
        agent.flush()
        XCTAssertEqual(Logs.records(dir).filter { $0.kind == .stats }.count, 2)
        // At the end the SDK never answers: after the timeout the end is written anyway.
        r.end(CallEnd(reason: .failed, statusCode: 9906))
        clock.advance(by: 1_999)
        agent.flush()
        XCTAssertFalse(Logs.records(dir).contains { $0.kind == .end }, "still waiting for the last sample")
        clock.advance(by: 1)
        agent.flush()
        let records = Logs.records(dir)
        XCTAssertEqual(records.last?.kind, .end)
        XCTAssertEqual(records.filter { $0.kind == .stats }.count, 2)
        pending.complete(Self.snapshot(9))  // too late: ignored
        agent.flush()
        XCTAssertEqual(Logs.records(dir).count, records.count)
        agent.shutdown()
    }

    /// The real clock and Dispatch timers, at a short interval.
    func testRealTimerCadence() {
        let dir = Logs.directory()
        var config = Logs.configuration(dir)
        config.interval = 0.05
        let agent = CallStatsAgent(configuration: config)
        let n = Counter()
        let r = agent.attach(callID: "rt", info: CallInfo(direction: .outgoing, sdk: "s", sdkVersion: "1"), call: FakeCall { Self.snapshot(n.next()) })
        Thread.sleep(forTimeInterval: 0.6)
        r.end(CallEnd(reason: .terminatedLocally))
        agent.flush()
        let stats = Logs.records(dir).filter { $0.kind == .stats }
        XCTAssertGreaterThanOrEqual(stats.count, 5, "about 12 expected in 0.6 s at 50 ms")
        XCTAssertLessThanOrEqual(stats.count, 14)
        let gaps = zip(stats.dropFirst(), stats.dropLast()).map { $0.ts - $1.ts }
        XCTAssertGreaterThanOrEqual(gaps.dropLast().min() ?? 0, 30, "never much faster than the interval")
        agent.shutdown()
    }

    /// An app that drops the agent without `shutdown()` leaves no timer running, and what was
    /// recorded is in a complete file.
    func testReleasedAgentStopsItsTimersAndWritesWhatIsQueued() {
        let dir = Logs.directory()
        let clock = ManualClock()
        var agent: CallStatsAgent? = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: FileStorage())
        weak let released = agent
        agent!.attach(callID: "x", info: CallInfo(direction: .outgoing, sdk: "s", sdkVersion: "1"), call: FakeCall { Self.snapshot(1) })
        clock.advance(by: 10_000)
        XCTAssertEqual(clock.activeTimers, 2, "housekeeping and the call's sampling")
        agent = nil
        XCTAssertNil(released)
        XCTAssertEqual(clock.activeTimers, 0)
        XCTAssertEqual(Logs.records(dir).map(\.kind), [.call, .stats])
    }

    func testShutdownStopsRecordingAndClosesTheFile() {
        let dir = Logs.directory()
        let clock = ManualClock()
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: FileStorage())
        let r = agent.attach(callID: "x", info: CallInfo(direction: .outgoing, sdk: "s", sdkVersion: "1"), call: FakeCall { Self.snapshot(1) })
        clock.advance(by: 10_000)
        agent.shutdown()
        XCTAssertEqual(agent.closedFiles().count, 1, "the file is complete after shutdown")
        r.event(SDKEvent(action: "callMetric", type: "callRinging"))
        clock.advance(by: 10_000)
        agent.flush()
        XCTAssertEqual(Logs.records(dir).map(\.kind), [.call, .stats])
        XCTAssertEqual(agent.attach(callID: "y", info: CallInfo(direction: .outgoing, sdk: "s", sdkVersion: "1")).callID, "y")
        XCTAssertEqual(agent.attachedCalls, 0, "nothing attaches after shutdown")
    }
}

/// A call whose fetches stay open until the test completes them.
final class Pending: MonitoredCall, @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [@Sendable (StatsSnapshot?) -> Void] = []
    private var count = 0

    var calls: Int { lock.lock(); defer { lock.unlock() }; return count }

    func fetchStats(_ completion: @escaping @Sendable (StatsSnapshot?) -> Void) {
        lock.lock()
        waiting.append(completion)
        count += 1
        lock.unlock()
    }

    func complete(_ s: StatsSnapshot?) {
        lock.lock()
        let w = waiting
        waiting = []
        lock.unlock()
        for c in w { c(s) }
    }
}
