import CallLog
import Foundation
import Logging

/// `callstats serve`'s diagnostics: a swift-log handler writing one line per entry, prefixed
/// `callstats serve: `, the request it is about (metadata `request`, `r-N`) first when there is one.
///
/// - `.info` and `.notice` (the address listened on, stopping and stopped, reloads, log files
///   started and closed) go to standard output, where a supervisor reads the first line for the
///   address bound; `.warning` and above (requests answered with an error, problems with the
///   configuration) go to standard error.
/// - Entries at `.warning` and above are limited to `linesPerSecond` a second: a hostile client
///   can make the server answer errors as fast as it sends requests, and must not fill the disk
///   through the lines that name them. What is dropped is counted and said with the next line
///   written in a later second. Entries below `.warning` come from the operator's actions and the
///   configured file sizes, never from one request, and are always written.
///
/// The limit is shared by every copy of one handler (a `Logger` copies its handler with each
/// change of metadata): all of one server's lines count against it.
public struct ServeLogHandler: LogHandler {
    public enum Stream: Sendable { case standardOutput, standardError }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info

    private let limiter: RateLimiter
    private let write: @Sendable (Stream, String) -> Void

    /// `write` takes whole lines, newline included; `now` is the time in whole seconds.
    init(
        linesPerSecond: Int = 10, now: @escaping @Sendable () -> Int64 = { EpochClock.nowMs() / 1000 },
        write: @escaping @Sendable (Stream, String) -> Void = ServeLogHandler.writeToProcess
    ) {
        limiter = RateLimiter(linesPerSecond: linesPerSecond, now: now)
        self.write = write
    }

    /// A logger with a handler (and a limit) of its own: one per server, so that servers in one
    /// process do not share a limit. No `LoggingSystem.bootstrap`: it is global, once per process.
    public static func logger() -> Logger {
        let handler = ServeLogHandler()
        return Logger(label: "callstats.serve") { _ in handler }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var line = "callstats serve: "
        if let request = merged.removeValue(forKey: "request") { line += "\(request) " }
        line += event.message.description
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) { line += " \(key)=\(value)" }
        line += "\n"
        guard event.level >= .warning else { return write(.standardOutput, line) }
        if let text = limiter.admit(line) { write(.standardError, text) }
    }

    /// The process's standard output or error. A stream that cannot be written (a supervisor
    /// that read the address line and closed the pipe: `EPIPE`) loses the line and nothing more:
    /// `FileHandle.write` would stop the process there, and the server must go on serving.
    static let writeToProcess: @Sendable (Stream, String) -> Void = { stream, text in
        let fd = stream == .standardOutput ? STDOUT_FILENO : STDERR_FILENO
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }

    /// At most `linesPerSecond` lines in one second of the clock; the count of lines dropped is
    /// put before the first line let through in a later second.
    final class RateLimiter: Sendable {
        private struct Second {
            var second: Int64 = 0
            var lines = 0
            var suppressed = 0
        }
        private let state = Locked(Second())
        private let linesPerSecond: Int
        private let now: @Sendable () -> Int64

        init(linesPerSecond: Int, now: @escaping @Sendable () -> Int64) {
            self.linesPerSecond = linesPerSecond
            self.now = now
        }

        /// The text to write for `line` (newline included), or nil when it is dropped.
        func admit(_ line: String) -> String? {
            let second = now()
            return state.withLock { s -> String? in
                var prefix = ""
                if s.second != second {
                    if s.suppressed > 0 { prefix = "callstats serve: (\(s.suppressed) similar lines suppressed)\n" }
                    s = Second(second: second)
                }
                guard s.lines < linesPerSecond else {
                    s.suppressed += 1
                    return nil
                }
                s.lines += 1
                return prefix + line
            }
        }
    }
}
