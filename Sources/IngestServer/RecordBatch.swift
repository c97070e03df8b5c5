import CallLog

/// Why one line of a posted batch was not taken. `code` is stable (clients branch on it);
/// `reason` is for people and names what was wrong.
public struct LineRejection: Equatable, Sendable {
    public var line: Int
    public var code: String
    public var reason: String

    public init(line: Int, code: String, reason: String) {
        self.line = line
        self.code = code
        self.reason = reason
    }

    /// Codes a client may see.
    public enum Code {
        public static let invalidUTF8 = "invalid-utf8"
        public static let invalidJSON = "invalid-json"
        public static let notAnObject = "not-an-object"
        public static let missingField = "missing-field"
        public static let invalidField = "invalid-field"
        public static let newerVersion = "newer-version"
        public static let lineTooLong = "line-too-long"
        /// A statistics delta whose base snapshot the server does not hold: send that chain's
        /// next snapshot in full.
        public static let missingBase = "missing-base"
        public static let malformedDelta = "malformed-delta"
        /// A snapshot with more objects than one peer connection may hold (`StatsChainBounds`).
        public static let tooManyObjects = "too-many-objects"
        /// A snapshot that would take its client's open chains past the objects one client may
        /// have held (`IngestLog.Settings.maxHeldObjectsPerClient`).
        public static let tooManyObjectsHeld = "too-many-objects-held"
    }
}

/// A posted NDJSON body split into valid v1 records and rejected lines (1-based numbers).
public struct RecordBatch: Sendable {
    public struct Line: Sendable {
        public var number: Int
        public var record: LogRecord
        /// Length of the line as posted (for byte counts).
        public var bytes: Int
    }

    public var records: [Line] = []
    public var rejections: [LineRejection] = []
    /// Lines that held anything besides white space.
    public var lines = 0
    public var rejectedBytes = 0

    public init() {}

    /// Parses `text`. Blank lines are skipped (a trailing newline is not a line); a last line
    /// without a newline counts. Nothing here throws: every problem is a rejection of its line.
    public init(parsing text: [UInt8], maxLineBytes: Int) {
        text.withUnsafeBufferPointer { all in
            var start = 0
            var number = 0
            while start < all.count {
                number += 1
                var end = start
                while end < all.count && all[end] != 0x0A { end += 1 }
                var trimmedEnd = end
                if trimmedEnd > start && all[trimmedEnd - 1] == 0x0D { trimmedEnd -= 1 }
                let line = UnsafeBufferPointer(rebasing: all[start..<trimmedEnd])
                take(line, number: number, maxLineBytes: maxLineBytes)
                start = end + 1
            }
        }
    }

    private mutating func take(_ whole: UnsafeBufferPointer<UInt8>, number: Int, maxLineBytes: Int) {
        // A body saved by an editor may start with a byte-order mark: no part of the record.
        let hasMark = whole.count >= 3 && whole[0] == 0xEF && whole[1] == 0xBB && whole[2] == 0xBF
        let line = hasMark ? UnsafeBufferPointer(rebasing: whole[3...]) : whole
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { return }
        lines += 1
        func reject(_ code: String, _ reason: String) {
            rejections.append(LineRejection(line: number, code: code, reason: reason))
            rejectedBytes += line.count
        }
        guard line.count <= maxLineBytes else {
            return reject(LineRejection.Code.lineTooLong, "line is \(line.count) bytes, over the limit of \(maxLineBytes)")
        }
        if let bad = RecordBatch.firstInvalidUTF8(line) {
            return reject(LineRejection.Code.invalidUTF8, "invalid UTF-8 at byte \(bad + 1)")
        }
        let value: JSONValue
        do { value = try JSONValue.parse(line) } catch {
            return reject(LineRejection.Code.invalidJSON, "invalid JSON: \(error)")
        }
        guard case .object(let object) = value else { return reject(LineRejection.Code.notAnObject, "not a JSON object") }
        // The reader tolerates a missing `v` in old files; a live agent must say which format it speaks.
        guard object["v"] != nil else { return reject(LineRejection.Code.missingField, "missing field \"v\"") }
        do {
            let record = try LogRecord(json: value)
            records.append(Line(number: number, record: record, bytes: line.count))
        } catch {
            let code: String
            switch error {
            case .invalidJSON: code = LineRejection.Code.invalidJSON
            case .notAnObject: code = LineRejection.Code.notAnObject
            case .missingField: code = LineRejection.Code.missingField
            case .wrongType: code = LineRejection.Code.invalidField
            case .unsupportedVersion: code = LineRejection.Code.newerVersion
            }
            reject(code, error.description)
        }
    }

    /// Offset of the first byte that breaks UTF-8 (overlongs, surrogates and values past
    /// U+10FFFF included), or nil.
    static func firstInvalidUTF8(_ s: UnsafeBufferPointer<UInt8>) -> Int? {
        var i = 0
        let n = s.count
        while i < n {
            let b = s[i]
            if b < 0x80 { i += 1; continue }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            switch b {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return i
            }
            guard i + length <= n else { return i }
            guard s[i + 1] >= low && s[i + 1] <= high else { return i }
            for k in 2..<max(2, length) where s[i + k] & 0xC0 != 0x80 { return i }
            i += length
        }
        return nil
    }
}
