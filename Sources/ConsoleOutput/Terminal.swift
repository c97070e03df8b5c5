import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Exit codes, so scripts can tell "ran, but skipped some input" from failure.
public enum ExitStatus {
    public static let ok: Int32 = 0
    public static let failure: Int32 = 1
    /// The run finished but some input was skipped (damaged, malformed); details on stderr.
    public static let skippedInput: Int32 = 3
}

/// Writing to the terminal without Foundation's buffering surprises.
public enum Terminal {
    public static var isInteractive: Bool { isatty(2) == 1 }

    public static func error(_ message: String) {
        let line = Array((message + "\n").utf8)
        line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    }

    /// A status line that rewrites itself on a terminal (progress), and nothing elsewhere.
    public static func status(_ message: String) {
        guard isInteractive else { return }
        let line = Array(("\r\u{1B}[2K" + message).utf8)
        line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    }

    public static func clearStatus() {
        guard isInteractive else { return }
        let line = Array("\r\u{1B}[2K".utf8)
        line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    }
}

/// Label/value lines of a command's summary, the values aligned.
public enum AlignedRows {
    public static func render(_ rows: [(String, String)]) -> [String] {
        let width = rows.map(\.0.count).max() ?? 0
        // The values hold file names and ids: one row stays one line.
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + Printable.escaped($0.1) }
    }
}

/// Prints rows of columns aligned: text to the left, figures to the right; the one table
/// renderer of the commands (`config`, `internal compare-databases`, `query`). A column without
/// a header (a marker such as `*`) gets no rule under it, and is left out when no row has
/// anything in it, so that header, rule and rows line up whatever is shown.
public struct Table {
    public init(header: [String], rows: [[String]] = [], textColumns: Set<Int> = [], firstColumnIsText: Bool = true) {
        self.header = header
        self.rows = rows
        self.textColumns = firstColumnIsText ? textColumns.union([0]) : textColumns
    }

    public var header: [String]
    public var rows: [[String]] = []
    /// Columns of text, aligned to the left (the first unless the caller says otherwise).
    public var textColumns: Set<Int> = []

    public func render() -> String {
        let shown = header.indices.filter { i in !header[i].isEmpty || rows.contains { i < $0.count && !$0[i].isEmpty } }
        var widths = header.map(\.count)
        for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
        func line(_ cells: [String]) -> String {
            shown.map { i in
                let c = i < cells.count ? cells[i] : ""
                return textColumns.contains(i)
                    ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[i] - c.count) + c
            }.joined(separator: "  ").trimmingTrailingSpaces
        }
        let rule = line(header.indices.map { String(repeating: header[$0].isEmpty ? " " : "-", count: widths[$0]) })
        return ([line(header), rule] + rows.map(line)).joined(separator: "\n")
    }
}

extension String {
    /// A line of a table whose last column is text, without the padding after it.
    public var trimmingTrailingSpaces: String {
        var s = Substring(self)
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}

/// A command that cannot go on, said in one line (ArgumentParser prints "Error: " and it, and
/// exits with status 1).
public struct CommandFailure: Error, CustomStringConvertible {
    public init(message: String) { self.message = message }

    public var message: String
    public var description: String { message }
}

/// Buffered standard output: one write per 64 KiB instead of one per line.
public struct OutputBuffer {
    public init() {}

    private var bytes: [UInt8] = []

    public mutating func line(_ s: String) {
        bytes.append(contentsOf: s.utf8)
        bytes.append(0x0A)
        if bytes.count >= 1 << 16 { flush() }
    }

    public mutating func flush() {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + off, bytes.count - off) }
            if n <= 0 { break }  // closed pipe (e.g. `| head`): stop quietly
            off += n
        }
        bytes.removeAll(keepingCapacity: true)
    }
}
