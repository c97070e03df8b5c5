import Analysis
import MaterialCodec
import MaterialScanning
import CallLog
import Store

/// The jobs that remove calls from a database: `prune` (calls older than a date) and `forget`
/// (named calls, or every call of one person). The store removes and keeps rollups exact
/// (`SQLiteStore.removeCalls`); this finds which calls go.
public enum RetentionRun {
    public struct Report: Sendable {
        public var database: String
        public var removal: RemovalCounts
        public var matched: [String]
        /// Bytes of free pages in the file after the removal, and whether they were returned.
        public var freeBytes: Int64
        public var fileBytes: Int64
        public var reclaimed: Bool
    }

    /// Removes every call that started before `timestamp` (epoch ms). `progress` is told each
    /// stage as it begins (a few words, for a status line).
    public static func prune(
        database: String, before timestamp: Int64, reclaim: Bool, readerWaitSeconds: Double = 30,
        progress: ((String) -> Void)? = nil
    ) throws -> Report {
        let store = try open(database)
        progress?("removing the calls that started before the cut-off and rebuilding the rollups they counted in")
        let (ids, removal) = try store.removeCalls(startedBefore: timestamp)
        return try finish(
            ids, removal, in: store, database: database, reclaim: reclaim, readerWaitSeconds: readerWaitSeconds, progress: progress)
    }

    /// Removes the calls `callIDs`, and every call whose `call` record names `user` in a person
    /// field (`KeyedIdentifiers.isIdentifyingField`, at any depth of the record). With a
    /// pseudonymizer, ids and the user are looked up by their pseudonyms too, since that is
    /// what a pseudonymised database holds.
    public static func forget(
        database: String, callIDs: [String], user: String?, pseudonymizer: CallPseudonymizer?,
        reclaim: Bool, readerWaitSeconds: Double = 30, progress: ((String) -> Void)? = nil
    ) throws -> Report {
        let store = try open(database)
        progress?("finding the calls to remove")
        var wanted = callIDs
        if let pseudonymizer { wanted += callIDs.map(pseudonymizer.identifier) }
        var ids = try store.existingCallIDs(wanted)
        if let user {
            let names = Set([user] + (pseudonymizer.map { [$0.identifier(user)] } ?? []))
            var found = Set(ids)
            var looked = 0
            try store.forEachStoredMaterial { id, bytes in
                looked += 1
                if looked % 1000 == 0 { progress?("looking for the user in stored calls: \(looked) read, \(ids.count) found") }
                guard !found.contains(id), let material = try? CallMaterial(decoding: bytes), let info = material.info else { return }
                if namesPerson(info, in: names) { ids.append(id); found.insert(id) }
            }
        }
        return try remove(
            ids, from: store, database: database, reclaim: reclaim, readerWaitSeconds: readerWaitSeconds, progress: progress)
    }

    /// The store `database` names (`StoreLocation`).
    private static func open(_ database: String) throws -> any RetentionStore {
        try StoreLocation.openForWriting(database)
    }

    private static func remove(
        _ ids: [String], from store: any RetentionStore, database: String, reclaim: Bool, readerWaitSeconds: Double,
        progress: ((String) -> Void)?
    ) throws -> Report {
        progress?("removing \(ids.count) call\(ids.count == 1 ? "" : "s") and rebuilding the rollups they counted in")
        return try finish(
            ids, try store.removeCalls(ids), in: store, database: database, reclaim: reclaim, readerWaitSeconds: readerWaitSeconds,
            progress: progress)
    }

    private static func finish(
        _ ids: [String], _ removal: RemovalCounts, in store: any RetentionStore, database: String, reclaim: Bool,
        readerWaitSeconds: Double, progress: ((String) -> Void)?
    ) throws -> Report {
        // Asked for, the space is reclaimed even when no call matched: a run whose vacuum waited
        // in vain for readers is completed by running it again.
        if reclaim {
            progress?("vacuuming \(database)")
            try store.reclaimSpace(readerWaitSeconds: readerWaitSeconds)
        }
        let space = try store.fileSpace()
        return Report(
            database: database, removal: removal, matched: ids, freeBytes: space.free, fileBytes: space.total,
            reclaimed: reclaim)
    }

    /// Whether an identifying field of the `call` record (at any depth: its labels, or an object
    /// of the caller's) holds one of `names`, as text or as the JSON text of another value (a
    /// phone number given as a number).
    static func namesPerson(_ info: JSONObject, in names: Set<String>) -> Bool {
        func matches(_ object: JSONObject) -> Bool {
            object.entries.contains { entry in
                if KeyedIdentifiers.isIdentifyingField(entry.key), let text = KeyedIdentifiers.identifyingText(entry.value),
                    names.contains(text)
                {
                    return true
                }
                return inside(entry.value)
            }
        }
        func inside(_ value: JSONValue) -> Bool {
            switch value {
            case .object(let o): matches(o)
            case .array(let a): a.contains(where: inside)
            default: false
            }
        }
        return matches(info)
    }
}
