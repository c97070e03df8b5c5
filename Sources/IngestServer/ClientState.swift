import CallLog
import Foundation

/// Bearer tokens from a file: one per line, `#` starts a comment, blank lines ignored.
///
/// Reloaded on SIGHUP to exactly what the file then holds: a token removed from the file is
/// refused from that moment, and a file with no token left revokes every token (every POST
/// gets 401), so an operator can always withdraw a leaked token by editing the file. Only a
/// file that cannot be read keeps the previous tokens, since then nothing says what to hold.
/// At start a file without a token is an error: a server that accepts no one is a mistake.
public final class TokenList: Sendable {
    public let path: String
    private let tokens: Locked<Set<String>>

    public init(path: String) throws {
        self.path = path
        let read = try TokenList.read(path)
        guard !read.isEmpty else { throw TokenError(message: "\(path) holds no token (one per line, # for comments)") }
        tokens = Locked(read)
    }

    public var count: Int { tokens.withLock { $0.count } }

    static func read(_ path: String) throws -> Set<String> {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw TokenError(message: "cannot read tokens from \(path): \(error.localizedDescription)")
        }
        var out = Set<String>()
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let token = line.trimmingCharacters(in: .whitespaces)
            if !token.isEmpty { out.insert(token) }
        }
        return out
    }

    public enum Reload: Equatable, Sendable {
        /// The file's tokens replaced the previous ones (count: how many now).
        case loaded(Int)
        /// The file holds no token: every token is revoked.
        case revokedAll
        /// The file could not be read: the previous tokens stay.
        case failed(String)
    }

    /// Re-reads the file and holds exactly its tokens, or keeps the previous ones when it cannot
    /// be read.
    public func reload() -> Reload {
        let fresh: Set<String>
        do { fresh = try TokenList.read(path) } catch { return .failed("\(error)") }
        tokens.withLock { $0 = fresh }
        return fresh.isEmpty ? .revokedAll : .loaded(fresh.count)
    }

    public func contains(_ token: String) -> Bool { tokens.withLock { $0.contains(token) } }

    /// A warning when the file may be read by its group or by others (tokens are secrets: any
    /// local user who reads them can post as any client); nil when only its owner can.
    public func permissionWarning() -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let mode = st.st_mode & 0o777
        guard mode & 0o044 != 0 else { return nil }
        return "warning: the tokens file \(path) is readable by \(mode & 0o004 != 0 ? "every user" : "its group") "
            + "(mode \(String(mode, radix: 8))): make it readable by its owner only (chmod 600)"
    }
}

public struct TokenError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// What the server remembers about each client (a token, or without tokens an address):
/// the replies to its recent batches (`Callstats-Batch`), so that a retried batch gets the
/// same reply and is not written twice, and the calls it posted records for in the current
/// period, to refuse a client that fans out over too many calls.
final class ClientState: Sendable {
    /// A batch being written, or written with its reply.
    enum Batch {
        case inFlight(waiters: [@Sendable (Reply) -> Void])
        case done(Reply)
    }

    struct Reply: Sendable {
        var status: Int
        var body: String
    }

    /// Everything that changes, behind one lock.
    private struct Table {
        var batches: [String: Batch] = [:]
        /// Insertion order of `batches`' keys, oldest first, for eviction.
        var batchOrder: [String] = []
        var batchOrderStart = 0
        var callsByClient: [String: Set<String>] = [:]
        var periodStart: Int64

        mutating func evictOldBatches(keeping maxBatches: Int) {
            while batchOrder.count - batchOrderStart > maxBatches {
                let old = batchOrder[batchOrderStart]
                batchOrderStart += 1
                if case .done? = batches[old] { batches[old] = nil }
            }
            if batchOrderStart > 4096 && batchOrderStart * 2 > batchOrder.count {
                batchOrder.removeFirst(batchOrderStart)
                batchOrderStart = 0
            }
        }
    }

    private let table: Locked<Table>
    private let maxBatches: Int
    private let periodMs: Int64
    let maxCallsPerPeriod: Int

    init(maxBatches: Int, maxCallsPerPeriod: Int, periodMs: Int64) {
        self.maxBatches = maxBatches
        self.maxCallsPerPeriod = maxCallsPerPeriod
        self.periodMs = periodMs
        table = Locked(Table(periodStart: EpochClock.nowMs()))
    }

    enum BatchClaim {
        /// The batch is new: write it, then `finish`.
        case claimed
        /// Written before: this is its reply.
        case answered(Reply)
        /// Being written by another request: `waiter` will get the reply.
        case waiting
    }

    func claim(batch key: String, waiter: @escaping @Sendable (Reply) -> Void) -> BatchClaim {
        table.withLock { t in
            switch t.batches[key] {
            case .done(let reply)?:
                return .answered(reply)
            case .inFlight(var waiters)?:
                waiters.append(waiter)
                t.batches[key] = .inFlight(waiters: waiters)
                return .waiting
            case nil:
                t.batches[key] = .inFlight(waiters: [])
                t.batchOrder.append(key)
                t.evictOldBatches(keeping: maxBatches)
                return .claimed
            }
        }
    }

    /// Stores the reply of a claimed batch (only successes are kept: a batch that failed is
    /// written when it is retried) and passes it to requests that waited for it (outside the
    /// lock: a waiter may claim again).
    func finish(batch key: String, reply: Reply) {
        let waiters = table.withLock { t -> [@Sendable (Reply) -> Void] in
            var waiters: [@Sendable (Reply) -> Void] = []
            if case .inFlight(let w)? = t.batches[key] { waiters = w }
            t.batches[key] = reply.status == 200 ? .done(reply) : nil
            return waiters
        }
        for w in waiters { w(reply) }
    }

    /// Admits `calls` for `client` in the current period, or returns how many it already has
    /// when that would take it past the limit (nothing is admitted then).
    func admit(calls: Set<String>, client: String) -> Int? {
        let now = EpochClock.nowMs()
        return table.withLock { t in
            if now - t.periodStart >= periodMs {
                t.callsByClient.removeAll(keepingCapacity: true)
                t.periodStart = now
            }
            // In place: a copy of the client's set per request cost more than the rest of the
            // request once a client had posted for thousands of calls.
            let before = t.callsByClient[client]?.count ?? 0
            let fresh = t.callsByClient[client].map { known in calls.reduce(0) { $0 + (known.contains($1) ? 0 : 1) } } ?? calls.count
            guard before + fresh <= maxCallsPerPeriod else { return before }
            if fresh > 0 { t.callsByClient[client, default: []].formUnion(calls) }
            return nil
        }
    }
}
