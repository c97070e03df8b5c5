import CallLog
import Foundation
import XCTest

/// Rotated logs' names, one format for the collector and `serve`: sortable by time, in UTC.
final class LogFileNameTests: XCTestCase {
    func testNamesSortByTimeAndSayItInUTC() {
        XCTAssertEqual(
            LogFileName.make(prefix: "calls", epochMs: 1_763_727_530_123, counter: 1, compression: .zstd), "calls-20251121T121850123Z-0001.ndjson.zst")
        XCTAssertEqual(
            LogFileName.make(prefix: "ingest", epochMs: 951_782_400_000, counter: 12_345, compression: .gzip), "ingest-20000229T000000000Z-2345.ndjson.gz")
        XCTAssertTrue(LogFileName.isLog("calls-20251121T121850123Z-0001.ndjson.zst", prefix: "calls"))
        XCTAssertFalse(LogFileName.isLog("calls-20251121T121850123Z-0001.ndjson", prefix: "calls"))
        XCTAssertFalse(LogFileName.isLog("other-20251121T121850123Z-0001.ndjson.zst", prefix: "calls"))
        // The calendar agrees with the C library's over four centuries, leap days included.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss"
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let ms = Int64.random(in: 0...12_000_000_000_000, using: &rng)
            let name = LogFileName.make(prefix: "p", epochMs: ms, counter: 0, compression: .zstd)
            let seconds = formatter.string(from: Date(timeIntervalSince1970: Double(ms / 1000)))
            let millis = String(ms % 1000)
            XCTAssertEqual(name, "p-\(seconds)\(String(repeating: "0", count: 3 - millis.count) + millis)Z-0000.ndjson.zst", "\(ms)")
        }
    }
}
