import Analysis

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The analysis database: calls, streams, intervals, events, findings, rollups, and the
/// ledger of ingested files that makes re-runs change nothing.
///
/// One writer at a time: `open(path:forWriting:)` takes an exclusive lock on `<db>.lock` and
/// refuses with a clear message while another run holds it. Readers (queries, reports) need
/// no lock: WAL mode lets them read while a run writes.
public final class CallStore {
    public let db: Database
    private var lockFD: Int32 = -1
    /// The inserts that run for every call, stream, interval, event and finding, prepared once
    /// and held here: finding a cached statement by its SQL text hashed that text for every row.
    private var inserts: [Insert: Statement] = [:]

    public init(path: String, forWriting: Bool = true) throws {
        let lock = forWriting ? try CallStore.acquireLock(path + ".lock", database: path) : -1
        do {
            db = try CallStore.openDatabase(path: path, forWriting: forWriting)
        } catch {
            if lock >= 0 { close(lock) }
            throw error
        }
        lockFD = lock
    }

    private static func openDatabase(path: String, forWriting: Bool) throws -> Database {
        do {
            let db = try Database(path: path, readOnly: !forWriting)
            if forWriting {
                try Schema.check(db)  // before the journal mode changes: a refused file stays as it was
                // A 64 MiB page cache keeps the intervals index (keyed by random call ids) in memory
                // within a transaction: a third less time in the kernel re-reading and writing pages.
                try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536;")
                try Schema.migrate(db)
            } else {
                guard try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'calls'")?.int64 == 1 else {
                    throw StoreError.notADatabase(path: path, reason: "it has no calls table")
                }
            }
            return db
        } catch let e as Database.Error where e.code == 26 /* SQLITE_NOTADB */ {
            throw StoreError.notADatabase(path: path, reason: e.message)
        }
    }

    deinit { releaseLock() }

    private func releaseLock() {
        if lockFD >= 0 { close(lockFD); lockFD = -1 }
    }

    private static func acquireLock(_ lockPath: String, database: String) throws -> Int32 {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return -1 }  // read-only folder: SQLite's own locking still applies
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            var buf = [UInt8](repeating: 0, count: 64)
            let n = read(fd, &buf, 63)
            close(fd)
            let holder = n > 0 ? "pid " + String(decoding: buf[0..<n], as: UTF8.self) : "another process"
            throw StoreError.locked(path: database, holder: holder)
        }
        ftruncate(fd, 0)
        let pid = Array(String(getpid()).utf8)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

    // MARK: - Ledger

    public struct FileEntry: Sendable {
        public var path: String
        public var fingerprint: String
        public var size: Int64
        public var mtime: Int64
        public var records: Int
        public var skipped: Int
        public var calls: Int

        public init(path: String, fingerprint: String, size: Int64, mtime: Int64, records: Int, skipped: Int, calls: Int) {
            self.path = path
            self.fingerprint = fingerprint
            self.size = size
            self.mtime = mtime
            self.records = records
            self.skipped = skipped
            self.calls = calls
        }
    }

    /// The path under which content with this fingerprint was already ingested, if any.
    public func ingestedPath(fingerprint: String) throws -> String? {
        try db.scalar("SELECT path FROM ingested_files WHERE fingerprint = ?", [.text(fingerprint)], cached: true)?.string
    }

    public func recordIngested(_ f: FileEntry, at now: Int64) throws {
        try db.run("""
            INSERT OR REPLACE INTO ingested_files(path, fingerprint, size, mtime, records, skipped, calls, ingested_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [f.path.sqlValue, f.fingerprint.sqlValue, f.size.sqlValue, f.mtime.sqlValue,
                  f.records.sqlValue, f.skipped.sqlValue, f.calls.sqlValue, now.sqlValue])
    }

    // MARK: - Calls

    /// What is stored of a call that a new run sees again.
    public struct StoredCall: Sendable {
        public var complete: Bool
        public var startTs: Int64
        public var endTs: Int64
        public var material: [UInt8]?
    }

    public func storedCall(_ callID: String) throws -> StoredCall? {
        guard let row = try db.rows("SELECT complete, start_ts, end_ts FROM calls WHERE call_id = ?", [.text(callID)], cached: true).first else {
            if case .blob(let m)? = try db.scalar("SELECT material FROM call_material WHERE call_id = ?", [.text(callID)], cached: true) {
                return StoredCall(complete: false, startTs: 0, endTs: 0, material: m)
            }
            return nil
        }
        var material: [UInt8]?
        if case .blob(let m)? = try db.scalar("SELECT material FROM call_material WHERE call_id = ?", [.text(callID)], cached: true) {
            material = m
        }
        return StoredCall(complete: row[0].int64 == 1, startTs: row[1].int64 ?? 0, endTs: row[2].int64 ?? 0, material: material)
    }

    /// Replaces everything stored for the call with `analysis`. `material` (the call's compact
    /// accumulated inputs) is kept for every call: records of a call that arrive later — a
    /// continuation in a new file, or the same records again — merge with it exactly.
    /// `replacing: false` is for a call the caller knows is not stored yet: it skips the deletes.
    public func write(_ analysis: CallAnalysis, complete: Bool, material: [UInt8]?, replacing: Bool = true) throws {
        let id = analysis.call.callID
        if replacing {
            for table in ["calls", "streams", "intervals", "events", "findings", "call_material"] {
                try db.run("DELETE FROM \(table) WHERE call_id = ?", [.text(id)])
            }
        }
        try insertCall(analysis.call, complete: complete)
        for s in analysis.streams { try insertStream(s) }
        for i in analysis.intervals { try insertInterval(i) }
        for e in analysis.events {
            try insert(.event, [e.callID.sqlValue, e.ts.sqlValue, e.kind.sqlValue, e.action.sqlValue, e.type.sqlValue, e.detailJSON.sqlValue])
        }
        for f in analysis.findings {
            try insert(.finding, [f.callID.sqlValue, f.code.sqlValue, f.severity.rawValue.sqlValue, f.startTs.sqlValue,
                                  f.durationMs.sqlValue, f.streamID.sqlValue, f.value.sqlValue, f.detail.sqlValue])
        }
        if let material { try insert(.material, [.text(id), .blob(material)]) }
    }

    private enum Insert: Hashable {
        case call, stream, interval, event, finding, material

        /// Full-row inserts list every column in table order.
        func sql(columns: Int) -> String {
            switch self {
            case .call: Insert.values("calls", columns)
            case .stream: Insert.values("streams", columns)
            case .interval: Insert.values("intervals", columns)
            case .event: "INSERT INTO events(call_id, ts, kind, action, type, detail) VALUES (?, ?, ?, ?, ?, ?)"
            case .finding: """
                INSERT INTO findings(call_id, code, severity, start_ts, duration_ms, stream_id, value, detail)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
            case .material: "INSERT INTO call_material(call_id, material) VALUES (?, ?)"
            }
        }

        static func values(_ table: String, _ count: Int) -> String {
            "INSERT INTO \(table) VALUES (\(Array(repeating: "?", count: count).joined(separator: ", ")))"
        }
    }

    private func insert(_ kind: Insert, _ values: [SQLValue]) throws {
        let statement: Statement
        if let prepared = inserts[kind] {
            prepared.reset()
            statement = prepared
        } else {
            statement = try db.statement(kind.sql(columns: values.count))
            inserts[kind] = statement
        }
        try statement.bind(values)
        while try statement.step() {}
    }

    private func insertCall(_ c: CallSummary, complete: Bool) throws {
        let values: [SQLValue] = [
            c.callID.sqlValue, c.startTs.sqlValue, c.endTs.sqlValue, c.durationMs.sqlValue,
            c.direction.sqlValue, c.sdk.sqlValue, c.sdkVersion.sqlValue, c.app.sqlValue, c.appVersion.sqlValue,
            c.platform.sqlValue, c.network.sqlValue, c.media.sqlValue, c.labelsJSON.sqlValue, c.source.sqlValue,
            c.restSentMs.sqlValue, c.ringingMs.sqlValue, c.answerMs.sqlValue, c.mediaMs.sqlValue,
            c.iceOutcome.sqlValue, c.iceDisconnects.sqlValue, c.iceDisconnectedMs.sqlValue, c.ipChanges.sqlValue,
            c.reconnects.sqlValue, c.localCandidateType.sqlValue, c.remoteCandidateType.sqlValue, c.transport.sqlValue,
            c.relayUsed.sqlValue,
            c.endReason.sqlValue, c.endStatusCode.sqlValue, c.endStatusText.sqlValue, c.sipStatus.sqlValue, c.sipReason.sqlValue,
            c.audioCodec.sqlValue, c.videoCodec.sqlValue,
            c.mosCQ.sqlValue, c.mosLQ.sqlValue, c.rFactor.sqlValue, c.mosWorst.sqlValue, c.videoScore.sqlValue, c.videoScoreWorst.sqlValue,
            c.lossPct.sqlValue, c.jitterMs.sqlValue, c.rttMs.sqlValue, c.iceRttMs.sqlValue, c.concealmentPct.sqlValue,
            c.sdkQualityMean.sqlValue, c.sdkQualityMin.sqlValue, c.clockSkewMs.sqlValue,
            c.grade.rawValue.sqlValue, c.gradeReason.sqlValue, c.findingCount.sqlValue, complete.sqlValue,
        ]
        try insert(.call, values)
    }

    private func insertStream(_ s: StreamSummary) throws {
        let values: [SQLValue] = [
            s.callID.sqlValue, s.streamID.sqlValue, s.ssrc.sqlValue, s.direction.rawValue.sqlValue, s.kind.rawValue.sqlValue,
            s.codec.sqlValue, s.clockRate.sqlValue, s.source.sqlValue, s.startTs.sqlValue, s.endTs.sqlValue,
            s.packets.sqlValue, s.bytes.sqlValue, s.packetsLost.sqlValue, s.lossPct.sqlValue,
            s.jitterMeanMs.sqlValue, s.jitterMaxMs.sqlValue, s.rttMeanMs.sqlValue, s.bitrateKbps.sqlValue,
            s.concealmentPct.sqlValue, s.mosMean.sqlValue, s.mosMin.sqlValue,
            s.fpsMean.sqlValue, s.widthMax.sqlValue, s.heightMax.sqlValue, s.freezeCount.sqlValue, s.freezeMs.sqlValue,
            s.videoScoreMean.sqlValue, s.qualityLimitation.sqlValue, s.counterResets.sqlValue,
        ]
        try insert(.stream, values)
    }

    private func insertInterval(_ i: IntervalMetrics) throws {
        let values: [SQLValue] = [
            i.callID.sqlValue, i.streamID.sqlValue, i.startTs.sqlValue, i.endTs.sqlValue,
            i.packets.sqlValue, i.packetsLost.sqlValue, i.lossPct.sqlValue, i.jitterMs.sqlValue, i.rttMs.sqlValue, i.iceRttMs.sqlValue,
            i.bitrateKbps.sqlValue, i.concealmentPct.sqlValue, i.jitterBufferMs.sqlValue, i.burstRatio.sqlValue,
            i.rFactor.sqlValue, i.mosCQ.sqlValue, i.mosLQ.sqlValue,
            i.fps.sqlValue, i.width.sqlValue, i.height.sqlValue, i.freezeCount.sqlValue, i.freezeMs.sqlValue,
            i.videoScore.sqlValue, i.qualityLimitation.sqlValue,
        ]
        try insert(.interval, values)
    }

    // MARK: - Summary figures

    public struct Totals: Sendable {
        public var calls: Int
        public var byGrade: [String: Int]
        public var files: Int
    }

    public func totals() throws -> Totals {
        var byGrade: [String: Int] = [:]
        for r in try db.rows("SELECT grade, count(*) FROM calls GROUP BY grade") {
            byGrade[r[0].string ?? "?"] = Int(r[1].int64 ?? 0)
        }
        let files = Int(try db.scalar("SELECT count(*) FROM ingested_files")?.int64 ?? 0)
        return Totals(calls: byGrade.values.reduce(0, +), byGrade: byGrade, files: files)
    }
}
