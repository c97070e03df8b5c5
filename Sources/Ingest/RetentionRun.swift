import Analysis
import MaterialCodec
import MaterialScanning
import CallLog
import Store

/// The jobs that remove calls from a database: `prune` (calls older than a date) and `forget`
/// (named calls, or every call of one person). The store removes and keeps rollups exact
/// (`CallStore.removeCalls`); this finds which calls go.
public enum RetentionRun {
    public struct Report: Sendable {
        public var database: String
        public var removal: CallStore.Removal
        public var matched: [String]
        /// Bytes of free pages in the file after the removal, and whether they were returned.
        public var freeBytes: Int64
        public var fileBytes: Int64
        public var reclaimed: Bool
    }

    /// Removes every call that started before `timestamp` (epoch ms).
    public static func prune(database: String, before timestamp: Int64, reclaim: Bool) throws -> Report {
        if StoreLocation.isPostgres(database) { throw StoreError.notForPostgres(command: "prune") }
        let store = try CallStore(path: database)
        let ids = try store.callIDs(startedBefore: timestamp)
        return try remove(ids, from: store, database: database, reclaim: reclaim)
    }

    /// Removes the calls `callIDs`, and every call whose `call` record names `user` in a person
    /// field (`CallPseudonymizer.personFields`, in the record or its labels). With a
    /// pseudonymizer, ids and the user are looked up by their pseudonyms too, since that is
    /// what a pseudonymised database holds.
    public static func forget(
        database: String, callIDs: [String], user: String?, pseudonymizer: CallPseudonymizer?,
        reclaim: Bool
    ) throws -> Report {
        if StoreLocation.isPostgres(database) { throw StoreError.notForPostgres(command: "forget") }
        let store = try CallStore(path: database)
        var wanted = callIDs
        if let pseudonymizer { wanted += callIDs.map(pseudonymizer.identifier) }
        var ids = try store.existingCallIDs(wanted)
        if let user {
            let names = Set([user] + (pseudonymizer.map { [$0.identifier(user)] } ?? []))
            var found = Set(ids)
            try store.forEachStoredMaterial { id, bytes in
                guard !found.contains(id), let material = try? CallMaterial(decoding: bytes), let info = material.info else { return }
                if namesPerson(info, in: names) { ids.append(id); found.insert(id) }
            }
        }
        return try remove(ids, from: store, database: database, reclaim: reclaim)
    }

    private static func remove(_ ids: [String], from store: CallStore, database: String, reclaim: Bool) throws -> Report {
        let removal = try store.removeCalls(ids)
        if reclaim && removal.calls > 0 { try store.reclaimSpace() }
        let space = try store.fileSpace()
        return Report(
            database: database, removal: removal, matched: ids, freeBytes: space.free, fileBytes: space.total,
            reclaimed: reclaim && removal.calls > 0)
    }

    /// Whether a person field of the `call` record (or of its labels) holds one of `names`,
    /// as text or as a number (a phone number given as one).
    static func namesPerson(_ info: JSONObject, in names: Set<String>) -> Bool {
        let fields = Set(CallPseudonymizer.personFields.map { $0.lowercased() })
        func matches(_ object: JSONObject) -> Bool {
            object.entries.contains { entry in
                guard fields.contains(entry.key.lowercased()) else { return false }
                switch entry.value {
                case .string(let s): return names.contains(s)
                case .number: return names.contains(entry.value.serialized())
                default: return false
                }
            }
        }
        if matches(info) { return true }
        if case .object(let labels)? = info["labels"] { return matches(labels) }
        return false
    }
}
