@testable import MaterialScanning
import CallLog
import Simulator
import XCTest

/// The scanner keeps a chain's objects from one full report to the next, recognising objects by
/// position and skipping those whose bytes did not change but for the timestamp. Whatever it
/// keeps, its state after each report must equal what a fresh scanner reads from that report.
final class ScannerTests: XCTestCase {
    func line(_ report: String) -> String {
        #"{"v":1,"kind":"stats","call":"c","ts":1700000000000,"format":"w3c","pc":"a","report":["# + report + "]}"
    }

    let candidate = #"{"id":"C1","timestamp":TS,"type":"local-candidate","candidateType":"host","protocol":"udp"}"#
    let certificate = #"{"id":"CERT","timestamp":TS,"type":"certificate","fingerprint":"AB:CD"}"#
    let inbound = #"{"id":"IN1","timestamp":TS,"type":"inbound-rtp","kind":"audio","ssrc":5,"codecId":"CO1","packetsReceived":100,"jitter":0.01}"#
    let untimed = #"{"id":"T1","type":"transport","selectedCandidatePairId":"P1"}"#

    func report(_ ts: String, _ objects: [String]) -> String {
        line(objects.map { $0.replacingOccurrences(of: "TS", with: ts) }.joined(separator: ","))
    }

    func scan(_ scanner: inout StatsScanner, _ text: String) throws -> ChainState {
        var bytes = Array(text.utf8)
        let scanned = try bytes.withUnsafeMutableBufferPointer { b in try scanner.scan(UnsafeBufferPointer(b)) }
        return scanner[chain: scanned.chain]
    }

    func assertSame(_ kept: ChainState, _ fresh: ChainState, _ step: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(kept.t, fresh.t, step, file: file, line: line)
        XCTAssertEqual(Set(kept.objects.keys), Set(fresh.objects.keys), step, file: file, line: line)
        for (id, a) in zip(kept.objects.keys, kept.objects.values) {
            guard let b = fresh.objects[id] else { continue }
            XCTAssertEqual(a.type, b.type, "\(step) \(id)", file: file, line: line)
            XCTAssertEqual(a.timestamp.isNaN ? nil : a.timestamp, b.timestamp.isNaN ? nil : b.timestamp, "\(step) \(id)", file: file, line: line)
            XCTAssertEqual(a.str, b.str, "\(step) \(id)", file: file, line: line)
            XCTAssertEqual(a.num.map { $0.isNaN ? nil : $0 }, b.num.map { $0.isNaN ? nil : $0 }, "\(step) \(id)", file: file, line: line)
            XCTAssertEqual(a.rate, b.rate, "\(step) \(id)", file: file, line: line)
        }
    }

    /// A delta can make a legacy object another type (a `type` among its values). Legacy numbers
    /// are not kept before a delta, so there is nothing to predict the next change from: the
    /// scanner must not read them (it trapped on such input, found by the records fuzzer).
    func testADeltaThatMakesALegacyObjectAnotherTypeIsApplied() throws {
        var scanner = StatsScanner()
        let envelope = #""v":1,"kind":"stats","call":"c","format":"goog""#
        _ = try scan(
            &scanner,
            "{" + envelope + #","ts":1000,"seq":0,"report":[{"id":"ssrc_1_recv","type":"ssrc","timestamp":1000,"values":{"ssrc":"1","bytesReceived":"10"}}]}"#)
        let state = try scan(
            &scanner,
            "{" + envelope + #","ts":2000,"seq":1,"base":0,"delta":{"t":2000,"set":{"ssrc_1_recv":{"values":{"bytesReceived":"20","type":"inbound-rtp"}}}}}"#)
        XCTAssertEqual(state.t, 2000)
        _ = try scan(&scanner, "{" + envelope + #","ts":3000,"seq":2,"base":1,"delta":{"t":3000,"set":{"ssrc_1_recv":{"values":{"bytesReceived":"30"}}}}}"#)
    }

    /// Spans within a line are Int32 offsets shifted with wrapping sums, safe below 1 GiB: a
    /// longer line is refused before any of it is read (the log readers stop at 64 MiB, but the
    /// scanner takes lines from any caller). The line is a valid record followed by zeros, in
    /// memory allocated but never touched past the record.
    func testALineOfAGibibyteIsRefusedUnread() throws {
        let count = 1 << 30
        let memory = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
        defer { memory.deallocate() }
        let record = Array(report("1700000000000", [inbound]).utf8)
        memory.copyMemory(from: record, byteCount: record.count)
        var scanner = StatsScanner()
        let line = UnsafeBufferPointer(start: memory.assumingMemoryBound(to: UInt8.self), count: count)
        XCTAssertThrowsError(try scanner.scan(line)) { error in
            guard case StatsScanError.lineTooLong(let bytes)? = error as? StatsScanError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(bytes, count)
        }
        let short = UnsafeBufferPointer(start: memory.assumingMemoryBound(to: UInt8.self), count: record.count)
        XCTAssertNoThrow(try scanner.scan(short))
    }

    /// Ids are kept as decoded Strings (invalid UTF-8 becomes U+FFFD); a delta names objects by
    /// their raw bytes, and must still find an object whose id is not valid UTF-8.
    func testDeltaFindsAnObjectWhoseIdIsNotValidUTF8() throws {
        func bytes(_ text: String) -> [UInt8] {
            Array(text.utf8).map { $0 == UInt8(ascii: "~") ? 0xFF : $0 }  // "~" stands for a byte that is not UTF-8
        }
        let full = bytes(
            #"{"v":1,"kind":"stats","call":"c","ts":1700000000000,"format":"w3c","pc":"a","seq":0,"report":[{"id":"IN~1","timestamp":1,"type":"inbound-rtp","kind":"audio","ssrc":5,"packetsReceived":100}]}"#
        )
        let delta = bytes(
            #"{"v":1,"kind":"stats","call":"c","ts":1700000001000,"format":"w3c","pc":"a","seq":1,"base":0,"delta":{"t":2,"set":{"IN~1":{"packetsReceived":150}}}}"#
        )
        var scanner = StatsScanner()
        _ = try full.withUnsafeBufferPointer { try scanner.scan($0) }
        let scanned = try delta.withUnsafeBufferPointer { try scanner.scan($0) }
        let state = scanner[chain: scanned.chain]
        XCTAssertEqual(state.objects["IN\u{FFFD}1"]?.num[NumField.packetsReceived.rawValue], 150)
    }

    /// Forgetting an ended call drops its chains and no other call's: a delta that builds on
    /// the forgotten call's last report no longer applies, another call's still does.
    func testForgettingACallDropsExactlyItsChains() throws {
        func record(_ call: String, seq: Int, body: String) -> String {
            #"{"v":1,"kind":"stats","call":""# + call + #"","ts":1700000000000,"format":"w3c","pc":"a","seq":\#(seq),"# + body + "}"
        }
        let full = #""report":[{"id":"IN1","timestamp":1,"type":"inbound-rtp","packetsReceived":100}]"#
        let delta = #""base":0,"delta":{"t":2,"set":{"IN1":{"packetsReceived":150}}}"#
        var scanner = StatsScanner()
        for call in ["x", "y", "z"] { _ = try scan(&scanner, record(call, seq: 0, body: full)) }
        scanner.forget(call: "y")
        XCTAssertThrowsError(try scan(&scanner, record("y", seq: 1, body: delta)), "y's chain is gone") { error in
            guard case StatsScanError.missingBase = error else { return XCTFail("\(error)") }
        }
        for call in ["x", "z"] {
            let state = try scan(&scanner, record(call, seq: 1, body: delta))
            XCTAssertEqual(state.objects["IN1"]?.num[NumField.packetsReceived.rawValue], 150, call)
        }
    }

    /// A forgotten call's chain state is emptied and reused, objects included, by the next new
    /// chain: what the next call's records make of it must be what a fresh scanner makes.
    func testAChainInAReusedStateEqualsAFreshRead() throws {
        func record(_ call: String, seq: Int, body: String) -> String {
            #"{"v":1,"kind":"stats","call":""# + call + #"","ts":1700000000000,"format":"w3c","pc":"a","seq":\#(seq),"# + body + "}"
        }
        let x = [
            #""report":[{"id":"IN1","timestamp":1,"type":"inbound-rtp","kind":"audio","ssrc":5,"codecId":"CO1","packetsReceived":100,"jitter":0.01},{"id":"CO1","timestamp":1,"type":"codec","mimeType":"audio/opus","clockRate":48000},{"id":"OUT1","timestamp":1,"type":"outbound-rtp","kind":"video","ssrc":7,"packetsSent":10,"qualityLimitationReason":"cpu"}]"#,
            #""base":0,"delta":{"t":2,"set":{"IN1":{"packetsReceived":150},"OUT1":{"packetsSent":30}}}"#,
            #""base":1,"delta":{"t":3,"set":{"IN1":{"packetsReceived":190}}}"#,
            #""report":[{"id":"IN1","timestamp":4,"type":"inbound-rtp","kind":"audio","ssrc":5,"codecId":"CO1","packetsReceived":260,"jitter":0.02},{"id":"CO1","timestamp":4,"type":"codec","mimeType":"audio/opus","clockRate":48000},{"id":"OUT1","timestamp":4,"type":"outbound-rtp","kind":"video","ssrc":7,"packetsSent":50,"qualityLimitationReason":"cpu"}]"#,
        ]
        let y = [
            #""report":[{"id":"OUT1","timestamp":10,"type":"outbound-rtp","kind":"audio","ssrc":9,"packetsSent":3},{"id":"IN1","timestamp":10,"type":"inbound-rtp","kind":"video","ssrc":8,"packetsReceived":4}]"#,
            #""base":0,"delta":{"t":11,"set":{"IN1":{"packetsReceived":9}}}"#,
            #""report":[{"id":"OUT1","timestamp":12,"type":"outbound-rtp","kind":"audio","ssrc":9,"packetsSent":8},{"id":"IN1","timestamp":12,"type":"inbound-rtp","kind":"video","ssrc":8,"packetsReceived":12,"framesDecoded":5}]"#,
            #""base":2,"delta":{"t":13,"set":{"OUT1":{"packetsSent":11}}}"#,
        ]
        var kept = StatsScanner(), fresh = StatsScanner()
        for (seq, body) in x.enumerated() { _ = try scan(&kept, record("x", seq: seq, body: body)) }
        kept.forget(call: "x")
        for (seq, body) in y.enumerated() {
            let text = record("y", seq: seq, body: body)
            assertSame(try scan(&kept, text), try scan(&fresh, text), "y, record \(seq)")
        }
    }

    /// Every stored field, nested, as text (`Mirror`), leaving out `spares` (storage a recycled
    /// table keeps on purpose): a field added to the state or its objects later is compared too.
    func fields(_ value: Any, _ path: String = "") -> [String] {
        let mirror = Mirror(reflecting: value)
        guard !mirror.children.isEmpty else { return ["\(path) = \(String(describing: value))"] }
        return mirror.children.enumerated().flatMap { k, child -> [String] in
            let label = child.label ?? "\(k)"
            return label == "spares" ? [] : fields(child.value, path + "." + label)
        }
    }

    /// A recycled chain state is a new state but for its storage, and an object taken into a
    /// recycled object's storage is the fresh copy `StatObject()` and `assign` make.
    func testRecycledStatesAndObjectsEqualFreshOnes() throws {
        var scanner = StatsScanner()
        let full =
            #"{"v":1,"kind":"stats","call":"x","ts":1700000000000,"format":"w3c","pc":"a","seq":0,"report":[{"id":"IN1","timestamp":1,"type":"inbound-rtp","kind":"audio","ssrc":5,"codecId":"CO1","packetsReceived":100}]}"#
        let delta =
            #"{"v":1,"kind":"stats","call":"x","ts":1700000001000,"format":"w3c","pc":"a","seq":1,"base":0,"delta":{"t":2,"set":{"IN1":{"packetsReceived":150}}}}"#
        _ = try scan(&scanner, full)
        var state = try scan(&scanner, delta)
        XCTAssertNotEqual(fields(state), fields(ChainState()))
        state.recycle()
        XCTAssertEqual(fields(state), fields(ChainState()))

        var used = StatObject()
        used.type = .inboundRTP
        used.generation = 9
        used.num[0] = 1
        used.setRate(0, to: 2)
        used.str[0] = "old"
        used.beforeDelta(keepNumbers: true)
        used.previousTimestamp = 4
        used.stringsWritten = 5
        used.timestampValue = 3..<8
        used.timestampRate = 6
        var other = StatObject()
        other.type = .outboundRTP
        other.timestamp = 7
        other.num[1] = 8
        other.str[1] = "new"
        var fresh = StatObject()
        fresh.assign(other, generation: 3)
        used.take(other, generation: 3)
        XCTAssertEqual(fields(used), fields(fresh))
    }

    /// A stream's id found through its chain's last ids is the id its key makes, whichever
    /// chains had the place before (a place is reused by the next call's chain).
    func testStreamIDsThroughChainsEqualIDsByKey() {
        var names = StreamNames(), byKey = StreamNames()
        var generator = SplitMix64(seed: 5)
        for step in 0..<20_000 {
            let chain = Int(generator.next() % 4), pc = ["a", "b", "pc"][Int(generator.next() % 3)]
            let inbound = generator.next() % 2 == 0, kind: MediaKind = generator.next() % 2 == 0 ? .audio : .video
            let ssrc = UInt32(generator.next() % 24)
            XCTAssertEqual(
                names.id(chain: chain, pc: pc, inbound: inbound, kind: kind, ssrc: ssrc),
                byKey.id(pc: pc, inbound: inbound, kind: kind, ssrc: ssrc), "step \(step)")
        }
    }

    /// A report's time is the timestamp most of its objects carry; on a tie, the one that got
    /// there first. Counted in place for two values, in a list beyond.
    func testCommonTimestampIsTheMostFrequent() {
        func common(_ ts: [Double]) -> Double? {
            var c = CommonTimestamp()
            for t in ts { c.add(t) }
            return c.value
        }
        XCTAssertNil(common([]))
        XCTAssertEqual(common([5]), 5)
        XCTAssertEqual(common([5, 7, 7]), 7)
        XCTAssertEqual(common([1, 2]), 1)
        XCTAssertEqual(common([1, 2, 2, 1]), 2)
        XCTAssertEqual(common([1, 2, 3, 4, 3, 4, 4]), 4)
        XCTAssertEqual(common([9, 1, 2, 3, 3, 9, 3, 9]), 3)
        XCTAssertEqual(common([1, 2, 3, 3, 2, 2, 1, 1, 1]), 1)
    }

    func testKeptObjectsEqualAFreshRead() throws {
        let steps: [(String, String)] = [
            ("first", report("1000", [candidate, certificate, inbound, untimed])),
            // Only the timestamps change, one to a longer number: every object is kept as it is.
            ("timestamps only", report("10000", [candidate, certificate, inbound, untimed])),
            // A number of the same length, a string of another length, a fractional timestamp.
            (
                "same-length change",
                report(
                    "10500.5",
                    [
                        candidate.replacingOccurrences(of: "host", with: "srflx"), certificate,
                        inbound.replacingOccurrences(of: "100", with: "200"), untimed,
                    ])
            ),
            // A field added at the end, and one dropped.
            (
                "field added",
                report(
                    "11000",
                    [
                        candidate, certificate,
                        inbound.replacingOccurrences(of: #""jitter":0.01}"#, with: #""jitter":0.01,"packetsLost":3}"#),
                        untimed.replacingOccurrences(of: #","selectedCandidatePairId":"P1""#, with: ""),
                    ])
            ),
            // Objects reordered: positions no longer match, every object is read again.
            ("reordered", report("12000", [inbound, candidate, untimed, certificate])),
            // The same id twice: the last one wins, as in a fresh read, also when only the first
            // changed since the previous report.
            (
                "duplicate id",
                report(
                    "12500",
                    [
                        inbound, candidate, untimed, certificate,
                        inbound.replacingOccurrences(of: "100", with: "300"),
                    ])
            ),
            (
                "duplicate id, first changed",
                report(
                    "12600",
                    [
                        inbound.replacingOccurrences(of: "100", with: "200"), candidate,
                        untimed, certificate, inbound.replacingOccurrences(of: "100", with: "300"),
                    ])
            ),
            // The first copy again, unchanged but for the timestamp: the state held the second
            // copy, so it must be read, not skipped.
            (
                "after a duplicate, first unchanged",
                report(
                    "12650",
                    [
                        inbound.replacingOccurrences(of: "100", with: "200"), candidate,
                        untimed, certificate,
                    ])
            ),
            // An id twice, the first copy of a type the metrics ignore (which drops the object),
            // the second unchanged since the last report: it must be read again, not skipped.
            (
                "ignored duplicate, then unchanged",
                report(
                    "12700",
                    [
                        candidate.replacingOccurrences(of: "local-candidate", with: "local-`andidate"),
                        candidate, untimed, certificate, inbound.replacingOccurrences(of: "100", with: "300"),
                    ])
            ),
            ("dropped", report("13000", [inbound, untimed])),
            ("timestamps only again", report("14000", [inbound, untimed])),
            ("certificate back", report("15000", [inbound, untimed, certificate])),
            // An object the chain did not hold (the certificate), unchanged, after this report
            // added a held object under its id: it must be read (the last one wins), not kept.
            (
                "unheld id taken by an added object",
                report(
                    "16000",
                    [
                        inbound, untimed,
                        #"{"id":"CERT","timestamp":TS,"type":"inbound-rtp","kind":"audio","ssrc":9,"packetsReceived":1}"#,
                        certificate,
                    ])
            ),
        ]
        var kept = StatsScanner()
        for (name, text) in steps {
            var fresh = StatsScanner()
            assertSame(try scan(&kept, text), try scan(&fresh, text), name)
        }
    }

    /// An object that changed is compared member by member with its last version; only what
    /// differs is read. Whatever differs (a longer number, other keys, fewer or more members, a
    /// field written twice, nested durations), the state must equal a fresh read.
    func testChangedObjectsReadMemberByMemberEqualAFreshRead() throws {
        let video =
            #"{"id":"IN2","timestamp":TS,"type":"inbound-rtp","kind":"video","ssrc":7,"codecId":"CO2","framesDecoded":300,"frameWidth":640,"framesPerSecond":30,"qualityLimitationDurations":{"bandwidth":1.5,"cpu":0,"other":0}}"#
        let pair =
            #"{"id":"P1","timestamp":TS,"type":"candidate-pair","state":"succeeded","nominated":true,"currentRoundTripTime":0.07,"responsesReceived":10}"#
        func with(_ object: String, _ pairs: [(String, String)]) -> String {
            pairs.reduce(object) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
        }
        let steps: [(String, String)] = [
            ("first", report("1000", [inbound, video, pair, untimed])),
            (
                "counters grow",
                report("2000", [with(inbound, [("100", "150"), ("0.01", "0.02")]), with(video, [("300", "330")]), with(pair, [("10,", "11,")]), untimed])
            ),
            // 150 → 1500: the old bytes are a prefix of the new; the delimiter after them differs.
            ("longer number", report("3000", [with(inbound, [("100", "1500")]), video, pair, untimed])),
            ("shorter number", report("4000", [with(inbound, [("100", "9")]), video, pair, untimed])),
            (
                "string changes",
                report("5000", [with(inbound, [("\"audio\"", "\"video\""), ("100", "9")]), video, with(pair, [("succeeded", "failed")]), untimed])
            ),
            ("a key renamed", report("6000", [with(inbound, [("packetsReceived", "packetsSent"), ("100", "9")]), video, pair, untimed])),
            ("member dropped", report("7000", [with(inbound, [(#","jitter":0.01"#, ""), ("100", "8")]), video, pair, untimed])),
            ("member added", report("8000", [with(inbound, [(#""jitter":0.01"#, #""jitter":0.01,"packetsLost":2"#), ("100", "7")]), video, pair, untimed])),
            // Durations lose a key: it must read as absent, as in a fresh read (the object changed
            // in the report before too, so it is compared member by member).
            ("video changes", report("8500", [inbound, with(video, [("300", "350")]), pair, untimed])),
            ("nested member shrinks", report("9000", [inbound, with(video, [(#","cpu":0"#, ""), ("300", "360")]), pair, untimed])),
            ("nested member back", report("10000", [inbound, with(video, [("300", "390")]), pair, untimed])),
            // A field written twice: the later one wins; then only the earlier one changes.
            ("field twice", report("11000", [with(inbound, [(#""jitter":0.01"#, #""jitter":0.01,"packetsReceived":5"#)]), video, pair, untimed])),
            (
                "field twice, first changes",
                report("12000", [with(inbound, [(#""jitter":0.01"#, #""jitter":0.01,"packetsReceived":5"#), ("100", "120")]), video, pair, untimed])
            ),
            ("type changes", report("13000", [with(inbound, [("inbound-rtp", "outbound-rtp"), ("100", "130")]), video, pair, untimed])),
            ("type unknown", report("14000", [with(inbound, [("inbound-rtp", "media-playout"), ("100", "140")]), video, pair, untimed])),
            ("type back", report("15000", [with(inbound, [("100", "150")]), video, pair, untimed])),
            ("spaces", report("16000", [with(inbound, [(",", " , "), ("100", "160")]), video, pair, untimed])),
            ("spaces kept, value changes", report("17000", [with(inbound, [(",", " , "), ("100", "170")]), video, pair, untimed])),
            ("timestamp the same", report("17000", [with(inbound, [(",", " , "), ("100", "171")]), video, pair, untimed])),
            // The same id twice in the report before: its layouts are not used (the first copy's
            // jitter equals the next report's, but the state holds the second copy's).
            ("duplicate id", report("18000", [inbound, video, pair, untimed, with(inbound, [("100", "180"), ("0.01", "0.05")])])),
            ("after a duplicate", report("19000", [with(inbound, [("100", "190")]), video, pair, untimed])),
            // Unchanged but for a longer timestamp, then changed: compared member by member with
            // the layout carried over from the report before (moved by the longer timestamp).
            ("changed", report("19500", [with(inbound, [("100", "195"), ("0.01", "0.03")]), video, pair, untimed])),
            ("timestamp longer", report("195000.25", [with(inbound, [("100", "195"), ("0.01", "0.03")]), video, pair, untimed])),
            ("changed after unchanged", report("195001", [with(inbound, [("100", "196"), ("0.01", "0.01")]), video, pair, untimed])),
            ("timestamp shorter", report("1950", [with(inbound, [("100", "196"), ("0.01", "0.01")]), video, pair, untimed])),
            ("changed again", report("1951", [with(inbound, [("100", "197"), ("0.01", "0.04")]), video, pair, untimed])),
            // Members left out and back while others change (browsers omit a value they have no
            // measurement for): the missing ones read as absent, the rest are compared in place.
            (
                "a string and a number gone",
                report(
                    "1960",
                    [
                        with(inbound, [(#","codecId":"CO1""#, ""), (#","jitter":0.01"#, ""), ("100", "198")]),
                        with(video, [(#","framesDecoded":300"#, ""), ("30,", "29,")]),
                        with(pair, [(#""state":"succeeded","#, ""), ("10}", "12}")]), untimed,
                    ])
            ),
            ("and back", report("1970", [with(inbound, [("100", "199")]), with(video, [("30,", "28,")]), with(pair, [("10}", "13}")]), untimed])),
            (
                "durations gone",
                report(
                    "1980",
                    [inbound, with(video, [(#","qualityLimitationDurations":{"bandwidth":1.5,"cpu":0,"other":0}"#, ""), ("300", "310")]), pair, untimed])
            ),
            ("durations back", report("1990", [inbound, with(video, [("300", "320")]), pair, untimed])),
            (
                "an unknown member before a known one",
                report("2000", [with(inbound, [(#""ssrc""#, #""extra":[1,{"a":2}],"ssrc""#), ("100", "201")]), video, pair, untimed])
            ),
            (
                "a new field twice",
                report("2010", [with(inbound, [(#""ssrc""#, #""packetsLost":4,"packetsLost":6,"ssrc""#), ("100", "202")]), video, pair, untimed])
            ),
            ("its second copy gone", report("2015", [with(inbound, [(#""ssrc""#, #""packetsLost":4,"ssrc""#), ("100", "203")]), video, pair, untimed])),
            (
                "members swapped",
                report("2020", [with(inbound, [(#""packetsReceived":100,"jitter":0.01"#, #""jitter":0.02,"packetsReceived":203"#)]), video, pair, untimed])
            ),
            ("timestamp gone", report("2030", [with(inbound, [(#""timestamp":2030,"#, ""), ("100", "204")]), video, pair, untimed])),
            ("everything back", report("2040", [with(inbound, [("100", "205")]), video, pair, untimed])),
            ("last member gone", report("2050", [with(inbound, [(#","jitter":0.01"#, ""), ("100", "206")]), video, pair, untimed])),
            // Timestamps that differ between changed objects: one that starts with the bytes of the
            // one before (2060 and 20601), one written as a string, one equal to the first again.
            (
                "timestamps differ",
                report(
                    "2060",
                    [
                        with(inbound, [("100", "207")]),
                        with(video, [("300", "301"), (#""timestamp":TS"#, #""timestamp":20601"#)]),
                        with(pair, [("10}", "14}"), (#""timestamp":TS"#, #""timestamp":"2060""#)]), untimed,
                    ])
            ),
            (
                "and again",
                report(
                    "2070",
                    [
                        with(inbound, [("100", "208")]),
                        with(video, [("300", "302"), (#""timestamp":TS"#, #""timestamp":2070.5"#)]),
                        with(pair, [("10}", "15}")]), untimed,
                    ])
            ),
        ]
        var kept = StatsScanner()
        for (name, text) in steps {
            var fresh = StatsScanner()
            assertSame(try scan(&kept, text), try scan(&fresh, text), name)
        }
    }

    /// Each type reads only the numbers its metrics use (a candidate pair's byte counters are
    /// skipped). When an object's type changes, numbers whose bytes did not change but that the
    /// old type skipped must be read: the state equals a fresh read at every step.
    func testNumbersSkippedForOneTypeAreReadWhenTheTypeChanges() throws {
        let pair =
            #"{"id":"P2","timestamp":TS,"type":"candidate-pair","packetsReceived":40,"bytesSent":900,"currentRoundTripTime":0.05,"responsesReceived":10}"#
        func with(_ pairs: [(String, String)]) -> String { pairs.reduce(pair) { $0.replacingOccurrences(of: $1.0, with: $1.1) } }
        let steps: [(String, String)] = [
            ("a pair", report("1000", [pair])),
            ("its consent counter grows", report("2000", [with([("10}", "11}")])])),
            ("a pair becomes a stream", report("3000", [with([("candidate-pair", "inbound-rtp"), ("10}", "12}")])])),
            ("its packets grow", report("4000", [with([("candidate-pair", "inbound-rtp"), ("40", "41"), ("10}", "13}")])])),
            ("a stream becomes a pair", report("5000", [with([("40", "41"), ("10}", "14}")])])),
            ("a pair becomes an outbound stream", report("6000", [with([("candidate-pair", "outbound-rtp"), ("40", "41"), ("10}", "15}")])])),
        ]
        var kept = StatsScanner()
        for (name, text) in steps {
            var fresh = StatsScanner()
            let state = try scan(&kept, text)
            assertSame(state, try scan(&fresh, text), name)
            if name == "its consent counter grows" {
                XCTAssertNil(state.objects["P2"]?[.packetsReceived], "a pair's packet counter is not read")
                XCTAssertEqual(state.objects["P2"]?[.responsesReceived], 11)
            }
            if name == "a pair becomes a stream" { XCTAssertEqual(state.objects["P2"]?[.packetsReceived], 40) }
            if name == "a pair becomes an outbound stream" { XCTAssertEqual(state.objects["P2"]?[.bytesSent], 900) }
        }
    }

    /// Legacy (goog) objects hold their fields in a `values` object, whose members are compared
    /// one by one like an object's own: whatever changes inside it (members gone, added, written
    /// twice, an id or timestamp among them, spaces, the object empty or not an object), the
    /// state must equal a fresh read.
    func testLegacyValuesComparedMemberByMemberEqualAFreshRead() throws {
        let send =
            #"{"id":"ssrc_1_send","type":"ssrc","timestamp":TS,"values":{"bytesSent":"1000","packetsSent":"10","ssrc":"1","googCodecName":"opus","googRtt":"50","packetsLost":"0"}}"#
        let recv =
            #"{"id":"ssrc_2_recv","type":"ssrc","timestamp":TS,"values":{"bytesReceived":"2000","packetsReceived":"20","ssrc":"2","googCodecName":"VP8","googFrameRateReceived":"30","googFrameWidthReceived":"640","packetsLost":"1"}}"#
        let pair = #"{"id":"Conn-1","type":"googCandidatePair","timestamp":TS,"values":{"googActiveConnection":"true","googRtt":"40","bytesSent":"500"}}"#
        let track = #"{"id":"googTrack_1","type":"googTrack","timestamp":TS,"values":{"googTrackId":"a"}}"#
        func with(_ object: String, _ pairs: [(String, String)]) -> String {
            pairs.reduce(object) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
        }
        let steps: [(String, String)] = [
            ("first", report("1000", [send, recv, pair, track])),
            (
                "counters grow",
                report(
                    "2000",
                    [
                        with(send, [("1000", "1100"), (#""10""#, #""11""#)]),
                        with(recv, [("2000", "2200"), (#""20""#, #""22""#)]), with(pair, [("500", "550")]), track,
                    ])
            ),
            ("a member gone", report("3000", [with(send, [(#","googRtt":"50""#, ""), ("1000", "1200")]), recv, pair, track])),
            ("and back", report("4000", [with(send, [("1000", "1300")]), recv, pair, track])),
            (
                "members added first and last",
                report(
                    "5000",
                    [
                        with(
                            send,
                            [
                                (#"{"bytesSent""#, #"{"googJitterReceived":"7","bytesSent""#),
                                (#""packetsLost":"0"}"#, #""packetsLost":"0","googRtt2":"1"}"#), ("1000", "1400"),
                            ]),
                        recv, pair, track,
                    ])
            ),
            ("the last member gone", report("6000", [with(send, [(#","packetsLost":"0""#, ""), ("1000", "1500")]), recv, pair, track])),
            (
                "values empty",
                report(
                    "7000",
                    [
                        with(send, [(#""bytesSent":"1000","packetsSent":"10","ssrc":"1","googCodecName":"opus","googRtt":"50","packetsLost":"0""#, "")]),
                        recv, pair, track,
                    ])
            ),
            ("values back", report("8000", [with(send, [("1000", "1600")]), recv, pair, track])),
            ("a field twice", report("9000", [with(send, [(#""ssrc":"1""#, #""ssrc":"1","packetsSent":"99""#), ("1000", "1700")]), recv, pair, track])),
            (
                "the second copy changes",
                report("10000", [with(send, [(#""ssrc":"1""#, #""ssrc":"1","packetsSent":"98""#), ("1000", "1800")]), recv, pair, track])
            ),
            ("single again", report("11000", [with(send, [("1000", "1900")]), recv, pair, track])),
            (
                "a timestamp among the values",
                report("12000", [with(send, [(#""ssrc":"1""#, #""ssrc":"1","timestamp":5"#), ("1000", "2000")]), recv, pair, track])
            ),
            ("plain again", report("13000", [with(send, [("1000", "2100")]), recv, pair, track])),
            (
                "values not an object",
                report(
                    "14000",
                    [
                        with(send, [(#"{"bytesSent":"1000","packetsSent":"10","ssrc":"1","googCodecName":"opus","googRtt":"50","packetsLost":"0"}"#, "null")]),
                        recv, pair, track,
                    ])
            ),
            ("an object again", report("15000", [with(send, [("1000", "2200")]), recv, pair, track])),
            ("changed again", report("16000", [with(send, [("1000", "2300")]), with(recv, [("2000", "2400")]), pair, track])),
            (
                "a member after the values",
                report("17000", [with(send, [(#""packetsLost":"0"}}"#, #""packetsLost":"0"},"extra":1}"#), ("1000", "2400")]), recv, pair, track])
            ),
            (
                "and it changes",
                report("18000", [with(send, [(#""packetsLost":"0"}}"#, #""packetsLost":"0"},"extra":2}"#), ("1000", "2500")]), recv, pair, track])
            ),
            ("spaces inside", report("19000", [with(send, [(#"{"bytesSent""#, #"{ "bytesSent""#), (#":"1000","#, #" : "2600" , "#)]), recv, pair, track])),
            (
                "spaces kept, a value changes",
                report("20000", [with(send, [(#"{"bytesSent""#, #"{ "bytesSent""#), (#":"1000","#, #" : "2700" , "#)]), recv, pair, track])
            ),
            // Video becomes audio when the frame width goes (the legacy kind is inferred).
            (
                "a video member gone",
                report("21000", [send, with(recv, [(#","googFrameRateReceived":"30","googFrameWidthReceived":"640""#, ""), ("2000", "2500")]), pair, track])
            ),
            ("numbers written as numbers", report("22000", [with(send, [(#""bytesSent":"1000""#, #""bytesSent":2800"#)]), recv, pair, track])),
            ("timestamps only", report("23000", [with(send, [(#""bytesSent":"1000""#, #""bytesSent":2800"#)]), recv, pair, track])),
            ("the ignored object changes", report("24000", [send, recv, pair, with(track, [(#""a""#, #""b""#)])])),
        ]
        var kept = StatsScanner()
        for (name, text) in steps {
            var fresh = StatsScanner()
            assertSame(try scan(&kept, text), try scan(&fresh, text), name)
        }
    }

    /// Ids are recognised from their bytes at the object's start; one JSON escapes (a quote, a
    /// backslash, \u escapes) or one written with spaces is read the complete way, and a line
    /// that only looks like the expected id is not taken for it.
    func testIDsThatNeedEscapesOrSpacesEqualAFreshRead() throws {
        let quoted = #"{"id":"Q\"1","timestamp":TS,"type":"inbound-rtp","kind":"audio","ssrc":7,"packetsReceived":100}"#
        let slash = #"{"id":"B\\2","timestamp":TS,"type":"inbound-rtp","kind":"audio","ssrc":8,"packetsReceived":100}"#
        let unicode = #"{"id":"\u00561","timestamp":TS,"type":"inbound-rtp","kind":"audio","ssrc":9,"packetsReceived":100}"#
        let spaced = #"{ "id" : "S1" ,"timestamp":TS,"type":"inbound-rtp","kind":"audio","ssrc":10,"packetsReceived":100}"#
        let plain = #"{"id":"U1","timestamp":TS,"type":"inbound-rtp","kind":"audio","ssrc":11,"packetsReceived":100}"#
        func with(_ object: String, _ packets: String) -> String { object.replacingOccurrences(of: "100", with: packets) }
        let steps: [(String, String)] = [
            ("first", report("1000", [quoted, slash, unicode, spaced, plain])),
            ("all changed", report("2000", [with(quoted, "101"), with(slash, "102"), with(unicode, "103"), with(spaced, "104"), with(plain, "105")])),
            ("again", report("3000", [with(quoted, "111"), with(slash, "112"), with(unicode, "113"), with(spaced, "114"), with(plain, "115")])),
            // "V1", decoded from its escaped form, is the next id: now written plainly.
            (
                "the decoded id written plainly",
                report(
                    "4000",
                    [
                        with(quoted, "121"), with(slash, "122"),
                        with(unicode.replacingOccurrences(of: #"\u0056"#, with: "V"), "123"),
                        with(spaced, "124"), with(plain, "125"),
                    ])
            ),
        ]
        var kept = StatsScanner()
        for (name, text) in steps {
            var fresh = StatsScanner()
            assertSame(try scan(&kept, text), try scan(&fresh, text), name)
        }
        // The decoded id `Q"1` written unescaped is not JSON, even where that id is expected.
        let broken = report("5000", [#"{"id":"Q"1","timestamp":TS,"type":"inbound-rtp","kind":"audio","ssrc":7,"packetsReceived":131}"#])
        XCTAssertThrowsError(try scan(&kept, broken))
    }

    /// Objects inserted or removed before others shift their positions: the rest are found at
    /// their old places by id. Objects of types the metrics ignore are compared for their type
    /// and timestamp only, and read whole when their type becomes one the metrics read.
    func testShiftedAndIgnoredObjectsEqualAFreshRead() throws {
        let source = #"{"id":"S1","timestamp":TS,"type":"media-source","kind":"audio","audioLevel":0.1,"totalAudioEnergy":1.5}"#
        func with(_ object: String, _ pairs: [(String, String)]) -> String {
            pairs.reduce(object) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
        }
        let steps: [(String, String)] = [
            ("first", report("1000", [source, inbound, candidate, untimed])),
            ("source and inbound change", report("2000", [with(source, [("0.1", "0.2")]), with(inbound, [("100", "200")]), candidate, untimed])),
            ("one inserted before", report("3000", [certificate, with(source, [("0.1", "0.3")]), with(inbound, [("100", "300")]), candidate, untimed])),
            ("unchanged after the insert", report("4000", [certificate, with(source, [("0.1", "0.3")]), with(inbound, [("100", "300")]), candidate, untimed])),
            ("one removed before", report("5000", [with(source, [("0.1", "0.5")]), with(inbound, [("100", "500")]), candidate, untimed])),
            ("swapped", report("6000", [with(inbound, [("100", "600")]), with(source, [("0.1", "0.6")]), untimed, candidate])),
            // The ignored object's type becomes one the metrics read: it is read whole.
            (
                "ignored becomes read",
                report("7000", [with(inbound, [("100", "700")]), with(source, [("media-source", "inbound-rtp"), ("0.1", "0.7")]), untimed, candidate])
            ),
            ("and back", report("8000", [with(inbound, [("100", "800")]), with(source, [("0.1", "0.8")]), untimed, candidate])),
            (
                "ignored, unchanged type, new timestamp only",
                report("9000", [with(inbound, [("100", "800")]), with(source, [("0.1", "0.8")]), untimed, candidate])
            ),
        ]
        var kept = StatsScanner()
        for (name, text) in steps {
            var fresh = StatsScanner()
            assertSame(try scan(&kept, text), try scan(&fresh, text), name)
        }
    }

    /// Random edits of a real-shaped report, one after another: after each, the kept state
    /// equals a fresh read of the same report.
    func testRandomEditsEqualAFreshRead() throws {
        let objects = [
            candidate, certificate, inbound, untimed,
            #"{"id":"IN2","timestamp":TS,"type":"inbound-rtp","kind":"video","ssrc":7,"framesDecoded":300,"qualityLimitationDurations":{"bandwidth":1.5,"cpu":0,"other":0},"frameWidth":640}"#,
            #"{"id":"P1","timestamp":TS,"type":"candidate-pair","state":"succeeded","nominated":true,"currentRoundTripTime":0.07,"responsesReceived":10}"#,
        ]
        let edits: [(String) -> String] = [
            { $0.replacingOccurrences(of: "100", with: "1000") }, { $0.replacingOccurrences(of: "1000", with: "100") },
            { $0.replacingOccurrences(of: "0.01", with: "0.015") }, { $0.replacingOccurrences(of: "0.015", with: "0.01") },
            { $0.replacingOccurrences(of: "succeeded", with: "failed") }, { $0.replacingOccurrences(of: "failed", with: "succeeded") },
            { $0.replacingOccurrences(of: #","cpu":0"#, with: "") }, { $0.replacingOccurrences(of: #""bandwidth":1.5}"#, with: #""bandwidth":1.5,"cpu":2}"#) },
            { $0.replacingOccurrences(of: #""ssrc":"#, with: #""ssrc":5,"ssrc":"#) }, { $0.replacingOccurrences(of: #""ssrc":5,"ssrc":"#, with: #""ssrc":"#) },
            { $0.replacingOccurrences(of: #""kind":"audio""#, with: #""mediaType":"audio""#) },
            { $0.replacingOccurrences(of: #""mediaType":"audio""#, with: #""kind":"audio""#) },
            { $0.replacingOccurrences(of: "300", with: "31") }, { $0.replacingOccurrences(of: "31,", with: "300,") },
            { $0.replacingOccurrences(of: ",\"frameWidth\":640", with: "") }, { $0.replacingOccurrences(of: "}", with: " }") },
        ]
        var rng = SystemRandomNumberGenerator()
        var current = objects
        var kept = StatsScanner()
        for step in 0..<400 {
            let i = Int.random(in: current.indices, using: &rng)
            current[i] = edits.randomElement(using: &rng)!(current[i])
            var shown = current
            if Int.random(in: 0..<10, using: &rng) == 0 { shown.swapAt(Int.random(in: shown.indices, using: &rng), Int.random(in: shown.indices, using: &rng)) }
            if Int.random(in: 0..<15, using: &rng) == 0 { shown.append(shown[Int.random(in: shown.indices, using: &rng)]) }
            let text = report(String(1000 + step * (Int.random(in: 0..<4, using: &rng) == 0 ? 0 : 1000)), shown)
            var fresh = StatsScanner()
            assertSame(try scan(&kept, text), try scan(&fresh, text), "step \(step): \(text)")
        }
    }

    /// Deltas name the objects they change; the scanner finds each by the place it had in the
    /// last delta before hashing its id. Whatever the deltas name, in whatever order (objects
    /// dropped, added, reordered, changed in turn), the state after each must hold the numbers
    /// and strings of a fresh read of the full snapshot it stands for.
    func testDeltasNamingObjectsInAnyOrderEqualAFreshRead() throws {
        let objects = [
            candidate, certificate, inbound, untimed,
            #"{"id":"IN2","timestamp":TS,"type":"inbound-rtp","kind":"video","ssrc":7,"framesDecoded":300,"frameWidth":640}"#,
            #"{"id":"P1","timestamp":TS,"type":"candidate-pair","state":"succeeded","nominated":true,"currentRoundTripTime":0.07,"responsesReceived":10}"#,
            #"{"id":"RI1","timestamp":TS,"type":"remote-inbound-rtp","kind":"audio","ssrc":5,"packetsLost":1,"jitter":0.002,"roundTripTime":0.05}"#,
        ]
        var rng = SplitMix64(seed: 11)
        var encoder = StatsDeltaEncoder()
        var kept = StatsScanner()
        var counters = [Int](repeating: 100, count: objects.count)
        var deltas = 0
        for step in 0..<300 {
            // Every object's counters grow, some faster; now and then one is left out, the
            // order changes, or only one object changes.
            for i in counters.indices where rng.next() % 3 != 0 { counters[i] += Int(rng.next() % 50) }
            var shown = objects.indices.map { i in
                objects[i].replacingOccurrences(of: "100", with: String(counters[i]))
                    .replacingOccurrences(of: "300", with: String(counters[i] * 3))
                    .replacingOccurrences(of: ":10}", with: ":\(counters[i] / 10)}")
            }
            if rng.next() % 5 == 0 { shown.remove(at: Int(rng.next() % UInt64(shown.count))) }
            if rng.next() % 7 == 0 { shown.swapAt(Int(rng.next() % UInt64(shown.count)), Int(rng.next() % UInt64(shown.count))) }
            let full = report(String(1000 + step * 1000), shown)
            let written = encoder.encode(try Array(full.utf8).withUnsafeBufferPointer { try LogRecord(parsing: $0) })
            var out: [UInt8] = []
            written.write(to: &out)
            let line = String(decoding: out, as: UTF8.self)
            if line.contains(#""delta""#) { deltas += 1 }
            var fresh = StatsScanner()
            let a = try scan(&kept, line), b = try scan(&fresh, full)
            XCTAssertEqual(Set(a.objects.keys), Set(b.objects.keys), "step \(step): \(line)")
            for (id, x) in zip(a.objects.keys, a.objects.values) {
                guard let y = b.objects[id] else { continue }
                XCTAssertEqual(x.type, y.type, "step \(step) \(id)")
                XCTAssertEqual(x.str, y.str, "step \(step) \(id)")
                XCTAssertEqual(x.num.map { $0.isNaN ? nil : $0 }, y.num.map { $0.isNaN ? nil : $0 }, "step \(step) \(id): \(line)")
            }
        }
        XCTAssertGreaterThan(deltas, 200, "the encoder wrote deltas")
    }

    func testFieldsFitTheWrittenFieldSets() {
        XCTAssertLessThanOrEqual(NumField.count, 64)
        XCTAssertLessThanOrEqual(StrField.count, 32)
    }

    /// The number between an equal prefix and suffix must be one whole token: a timestamp that
    /// runs into the next member is damage, not an unchanged object.
    func testDamagedTimestampIsNotTakenForUnchanged() throws {
        var kept = StatsScanner()
        _ = try scan(&kept, report("1000", [candidate, inbound]))
        let damaged = report("2000", [candidate, inbound]).replacingOccurrences(
            of: #""timestamp":2000,"type":"local"#, with: #""timestamp":2000 1,"type":"local"#)
        XCTAssertThrowsError(try scan(&kept, damaged))
    }
}

/// A layout's elements are its content: `fields` compares recycled and fresh chain states field
/// by field, where the storage's address and capacity would differ.
extension AppendList: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, unlabeledChildren: Array(elements(0..<count)), displayStyle: .collection)
    }
}
