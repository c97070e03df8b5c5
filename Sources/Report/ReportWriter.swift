import Foundation
import Store

/// Builds the report of one database and writes it to a file.
public enum ReportWriter {
    public struct Result: Sendable {
        public var calls: Int64
        public var poor: Int64
        public var bytes: Int
        public var seconds: Double
    }

    /// Opens `database` read-only (a missing file or one that is not a callstats database is an
    /// error naming it) and writes the page to `output`. `progress` is told each stage as it
    /// begins (a few words, for a status line).
    public static func write(
        database: String, output: String, options: ReportData.Options = .init(), progress: ((String) -> Void)? = nil
    ) throws -> Result {
        let started = Date()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let reader = try StoreLocation.openForReading(database)
        let settings = try reader.queries.recordedSettings()
        let data = try ReportData(
            database: reader.rows, name: reader.name, generatedAt: now, grading: settings.summaryText, settings: settings,
            options: options, progress: progress)
        progress?("writing \(output)")
        let page = Data(ReportPage.html(data).utf8)
        try page.write(to: URL(fileURLWithPath: output), options: .atomic)
        return Result(calls: data.callCount, poor: data.poorCount, bytes: page.count, seconds: Date().timeIntervalSince(started))
    }
}
