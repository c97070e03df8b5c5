@testable import Analysis
import CallLog
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
        return try bytes.withUnsafeMutableBufferPointer { b in try scanner.scan(UnsafeBufferPointer(b)).state }
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

    func testKeptObjectsEqualAFreshRead() throws {
        let steps: [(String, String)] = [
            ("first", report("1000", [candidate, certificate, inbound, untimed])),
            // Only the timestamps change, one to a longer number: every object is kept as it is.
            ("timestamps only", report("10000", [candidate, certificate, inbound, untimed])),
            // A number of the same length, a string of another length, a fractional timestamp.
            ("same-length change", report("10500.5", [candidate.replacingOccurrences(of: "host", with: "srflx"), certificate,
                                                      inbound.replacingOccurrences(of: "100", with: "200"), untimed])),
            // A field added at the end, and one dropped.
            ("field added", report("11000", [candidate, certificate,
                                             inbound.replacingOccurrences(of: #""jitter":0.01}"#, with: #""jitter":0.01,"packetsLost":3}"#),
                                             untimed.replacingOccurrences(of: #","selectedCandidatePairId":"P1""#, with: "")])),
            // Objects reordered: positions no longer match, every object is read again.
            ("reordered", report("12000", [inbound, candidate, untimed, certificate])),
            // The same id twice: the last one wins, as in a fresh read, also when only the first
            // changed since the previous report.
            ("duplicate id", report("12500", [inbound, candidate, untimed, certificate,
                                              inbound.replacingOccurrences(of: "100", with: "300")])),
            ("duplicate id, first changed", report("12600", [inbound.replacingOccurrences(of: "100", with: "200"), candidate,
                                                             untimed, certificate, inbound.replacingOccurrences(of: "100", with: "300")])),
            ("dropped", report("13000", [inbound, untimed])),
            ("timestamps only again", report("14000", [inbound, untimed])),
        ]
        var kept = StatsScanner()
        for (name, text) in steps {
            var fresh = StatsScanner()
            assertSame(try scan(&kept, text), try scan(&fresh, text), name)
        }
    }

    /// The number between an equal prefix and suffix must be one whole token: a timestamp that
    /// runs into the next member is damage, not an unchanged object.
    func testDamagedTimestampIsNotTakenForUnchanged() throws {
        var kept = StatsScanner()
        _ = try scan(&kept, report("1000", [candidate, inbound]))
        let damaged = report("2000", [candidate, inbound]).replacingOccurrences(of: #""timestamp":2000,"type":"local"#, with: #""timestamp":2000 1,"type":"local"#)
        XCTAssertThrowsError(try scan(&kept, damaged))
    }
}
