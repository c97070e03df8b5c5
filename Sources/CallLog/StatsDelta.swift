/// Writing only what changed between two statistics snapshots of the same call.
///
/// A getStats report repeats ~90 % of itself every poll (certificates, codecs, candidates,
/// unchanged counters), so the writer stores the first snapshot of a chain in full and then
/// deltas; the reader rebuilds every full snapshot exactly: equal as JSON values, with the
/// report's objects in their original order. Members of an object are unordered in JSON
/// (RFC 8259) and Chrome does not keep them in a stable order between polls, so member order
/// is not carried (it cost a tenth of the log); a changed member keeps its place, a new one
/// is appended. A chain is one (call, peer connection, format) inside one
/// file segment: the writer starts every segment with full snapshots, so a segment never
/// depends on another and a damaged segment loses nothing outside itself.
///
/// Delta body (`"delta"` replaces `"report"`; `seq` counts snapshots, `base` names the one it
/// applies to):
/// - `t`: the timestamp most objects carry now. Every kept object whose timestamp equalled the
///   previous snapshot's `t` moves to this `t` without being listed.
/// - Prediction: every number of a kept object is first predicted as its previous value plus
///   its previous change (counters grow at a steady rate); only numbers that differ from the
///   prediction are listed, in `inc` (relative to the prediction) or `set`.
/// - `set`: `{id: {field: value}}` changed fields; object values merge recursively.
/// - `inc`: `{id: {field: d}}` numbers that changed by d: the reader computes `old + d` in IEEE
///   double arithmetic, and the writer uses `inc` only when that gives the new value bit for bit
///   and `d` is shorter to write than the value (counters, cumulative durations, timestamps).
/// - `unset`: `{id: [field]}` fields no longer present.
/// - `put`: whole objects that are new.
/// - `del`: ids no longer present.
/// - `order`: all ids in order, only when the natural order (kept ones, then new) is wrong.
/// The most statistics objects one chain (a call's peer connection in one format) may hold,
/// the same for every reader and for `serve` (`Data/FORMAT.md`, bounds). Every snapshot of a
/// chain is read over all its objects, so a chain whose reports keep adding objects would cost
/// time and memory growing with the square of its records; a real peer connection of a large
/// conference holds a few hundred.
public enum StatsChainBounds {
    public static let maximumObjects = 2_000
}

public struct StatsChainKey: Hashable, Sendable {
    public var call: String
    public var peerConnection: String
    public var format: String

    public init(call: String, peerConnection: String, format: String) {
        self.call = call
        self.peerConnection = peerConnection
        self.format = format
    }

    public init?(record: LogRecord) {
        guard record.kind == .stats else { return nil }
        self.init(
            call: record.call, peerConnection: record["pc"]?.stringValue ?? "",
            format: record["format"]?.stringValue ?? "")
    }
}

/// The chain keys of each call, so that forgetting an ended call removes its chains directly:
/// filtering every open chain at each call end grew with the square of the calls open at once.
/// May still list chains that were dropped since.
public struct ChainKeysByCall: Sendable {
    private var keys: [String: [StatsChainKey]] = [:]

    public init() {}

    /// Notes `key`; a call has one chain per peer connection and format, so the list is short.
    public mutating func note(_ key: StatsChainKey) {
        if keys[key.call]?.contains(key) != true { keys[key.call, default: []].append(key) }
    }

    /// The call's keys, no longer noted.
    public mutating func remove(call: String) -> [StatsChainKey] { keys.removeValue(forKey: call) ?? [] }

    public mutating func removeAll() { keys.removeAll(keepingCapacity: true) }
}

/// A snapshot as the codec keeps it: objects in order plus an index by id.
struct Snapshot {
    var objects: [JSONObject]
    var index: [String: Int]
    var t: JSONValue?
    var seq: Int64
    /// Per object id, each number's last change: the prediction for the next snapshot.
    var rates: [String: [String: Double]] = [:]

    init?(report: [JSONValue], seq: Int64) {
        var objects = [JSONObject]()
        objects.reserveCapacity(report.count)
        var index = [String: Int](minimumCapacity: report.count)
        for v in report {
            guard case .object(let o) = v, let id = o["id"]?.stringValue, index[id] == nil else { return nil }
            index[id] = objects.count
            objects.append(o)
        }
        self.objects = objects
        self.index = index
        self.t = Snapshot.commonTimestamp(objects)
        self.seq = seq
    }

    /// The most frequent `timestamp` (first seen wins ties), computed identically on both sides.
    static func commonTimestamp(_ objects: [JSONObject]) -> JSONValue? {
        var counts: [Double: Int] = [:]
        var best: Double?
        var bestCount = 0
        for o in objects {
            guard case .number(let t)? = o["timestamp"] else { continue }
            let c = (counts[t] ?? 0) + 1
            counts[t] = c
            if c > bestCount { best = t; bestCount = c }
        }
        return best.map { .number($0) }
    }

    var report: [JSONValue] { objects.map { .object($0) } }
}

/// Turns full snapshots into delta records. One per log segment.
public struct StatsDeltaEncoder {
    private var chains: [StatsChainKey: Snapshot] = [:]
    private var keysByCall = ChainKeysByCall()

    public init() {}

    /// Forget all chains: the next snapshot of every chain is written in full.
    public mutating func reset() {
        chains.removeAll(keepingCapacity: true)
        keysByCall.removeAll()
    }

    /// Forget one call's chains (at call end), keeping memory bounded by open calls.
    public mutating func forget(call: String) {
        for key in keysByCall.remove(call: call) { chains[key] = nil }
    }

    /// Returns the record to write for `record`: itself with `seq` added if it must be full,
    /// or a delta record. Records other than full-report `stats` pass through unchanged.
    public mutating func encode(_ record: LogRecord) -> LogRecord { encode(record, restored: nil) }

    /// `encode(record)` for a record that `StatsDeltaDecoder.restore` returned (its report
    /// unchanged) with `restored`: the decoder's indexed snapshot is taken instead of indexing the
    /// report again, and its rates too when they were computed from the snapshot this chain
    /// holds (the same objects), which is the case while decoder and encoder go in step. The
    /// record written is the same as `encode(record)` writes.
    public mutating func encode(_ record: LogRecord, restored: RestoredSnapshot?) -> LogRecord {
        guard let key = StatsChainKey(record: record), case .array(let report)? = record["report"] else { return record }
        let previous = chains[key]
        let seq = (previous?.seq ?? -1) + 1
        var current: Snapshot
        if let restored, previous == nil || restored.restoredFrom(previous!.objects) {
            current = restored.snapshot
            current.seq = seq
            if previous == nil {
                current.rates = [:]
                keysByCall.note(key)
            }
        } else {
            guard var fresh = Snapshot(report: report, seq: seq) else {
                // Objects without unique ids cannot be diffed; keep the chain broken so the next is full too.
                chains[key] = nil
                return record
            }
            if let previous { StatsDeltaEncoder.computeRates(old: previous, new: &fresh) } else { keysByCall.note(key) }
            current = fresh
        }
        chains[key] = current
        // The record written in full: `seq` before `report`. Built only when it may be written.
        func full() -> LogRecord {
            var full = record
            full.body["report"] = nil
            full.body["seq"] = .number(Double(seq))
            full.body["report"] = .array(report)
            return full
        }
        guard let previous else { return full() }
        let delta = StatsDeltaEncoder.diff(from: previous, to: current)
        var out = record
        out.body["report"] = nil
        out.body["seq"] = .number(Double(seq))
        out.body["base"] = .number(Double(previous.seq))
        out.body["delta"] = .object(delta)
        // When most objects are new (a renegotiation), the full report may be the smaller record;
        // only then is it worth writing both out to compare.
        if case .array(let put)? = delta["put"], put.count * 2 > current.objects.count,
            case let full = full(), out.jsonLine.utf8.count >= full.jsonLine.utf8.count
        {
            // A reader starts the chain again at a full record, without rates: so must the next delta.
            current.rates = [:]
            chains[key] = current
            return full
        }
        return out
    }

    static func diff(from old: Snapshot, to new: Snapshot) -> JSONObject {
        var set = JSONObject(), inc = JSONObject(), unset = JSONObject()
        var put = [JSONValue](), del = [JSONValue]()
        for o in new.objects {
            let id = o["id"]!.stringValue!
            guard let oi = old.index[id] else { put.append(.object(o)); continue }
            let before = expected(old.objects[oi], from: old.t, to: new.t, rates: old.rates[id])
            let change = fieldDiff(before, o)
            if !change.set.isEmpty { set[id] = .object(change.set) }
            if !change.inc.isEmpty { inc[id] = .object(change.inc) }
            if !change.unset.isEmpty { unset[id] = .array(change.unset.map { .string($0) }) }
        }
        for o in old.objects {
            let id = o["id"]!.stringValue!
            if new.index[id] == nil { del.append(.string(id)) }
        }
        var d = JSONObject()
        if let t = new.t { d["t"] = t }
        if !set.isEmpty { d["set"] = .object(set) }
        if !inc.isEmpty { d["inc"] = .object(inc) }
        if !unset.isEmpty { d["unset"] = .object(unset) }
        if !put.isEmpty { d["put"] = .array(put) }
        if !del.isEmpty { d["del"] = .array(del) }
        let natural = naturalOrder(
            old: old, newIDs: Set(new.index.keys),
            added: put.compactMap { v -> String? in
                guard let id = v["id"]?.stringValue, old.index[id] == nil else { return nil }
                return id
            })
        let actual = new.objects.map { $0["id"]!.stringValue! }
        if natural != actual { d["order"] = .array(actual.map { .string($0) }) }
        return d
    }

    struct FieldChange {
        var set = JSONObject(), inc = JSONObject()
        var unset: [String] = []
    }

    /// What turns `old` into `new`: changed fields (nested objects merged), integer increments,
    /// removed fields.
    static func fieldDiff(_ old: JSONObject, _ new: JSONObject) -> FieldChange {
        var c = FieldChange()
        for e in new.entries {
            guard let before = old[e.key] else { c.set.entries.append(e); continue }
            if before == e.value { continue }
            if case .object(let bo) = before, case .object(let no) = e.value {
                let nested = fieldDiff(bo, no)
                if nested.unset.isEmpty {
                    // Nested increments are rare; carry them as plain values.
                    var merged = nested.set
                    for ne in nested.inc.entries { merged[ne.key] = no[ne.key] }
                    c.set.entries.append((key: e.key, value: .object(merged)))
                } else {
                    c.set.entries.append(e)  // replaced whole: objects in `set` merge, so clear first
                    c.unset.append(e.key)
                }
            } else if case .number(let a) = before, case .number(let b) = e.value,
                let d = StatsDeltaEncoder.shortestAddend(from: a, to: b)
            {
                c.inc.entries.append((key: e.key, value: .number(d)))
            } else {
                c.set.entries.append(e)
            }
        }
        for e in old.entries where new[e.key] == nil { c.unset.append(e.key) }
        return c
    }

    /// The number with the shortest text whose IEEE sum with `a` is exactly `b`, when it is
    /// shorter to write than `b` itself.
    static func shortestAddend(from a: Double, to b: Double) -> Double? {
        guard a.isFinite, b.isFinite else { return nil }
        let exact = b - a
        guard exact.isFinite, exact != 0 else { return nil }
        let limit = numberText(b).count
        var best: Double?
        var bestLength = limit
        if a + exact == b, numberText(exact).count < bestLength {
            best = exact
            bestLength = numberText(exact).count
        }
        // Fewer significant digits often still land on the same double.
        let magnitude = (abs(exact)).log10Floor
        for digits in 1...15 {
            let scale = pow10(digits - 1 - magnitude)
            let candidate = scale.isFinite && scale > 0 ? (exact * scale).rounded() / scale : exact
            guard candidate.isFinite, a + candidate == b else { continue }
            let length = numberText(candidate).count
            if length < bestLength { best = candidate; bestLength = length }
            break
        }
        return best
    }

    static func numberText(_ d: Double) -> [UInt8] {
        var out = [UInt8]()
        JSONValue.writeNumber(d, to: &out)
        return out
    }

    /// Numbers moved on by their last change (both sides compute this identically).
    static func predicted(_ o: JSONObject, rates: [String: Double]?) -> JSONObject {
        guard let rates, !rates.isEmpty else { return o }
        var out = o
        for i in out.entries.indices {
            if case .number(let v) = out.entries[i].value, let r = rates[out.entries[i].key] {
                out.entries[i].value = .number(v + r)
            }
        }
        return out
    }

    /// `predicted(advanced(o, from: oldT, to: newT), rates: rates)` in one pass, copying the
    /// object at most once (both sides run it for every kept object of every snapshot).
    static func expected(_ o: JSONObject, from oldT: JSONValue?, to newT: JSONValue?, rates: [String: Double]?) -> JSONObject {
        let moved = movedTimestamp(o, from: oldT, to: newT)
        let rates = rates.flatMap { $0.isEmpty ? nil : $0 }
        guard moved != nil || rates != nil else { return o }
        var out = o
        if let moved { out.entries[moved.index].value = moved.value }
        if let rates {
            for i in out.entries.indices {
                if case .number(let v) = out.entries[i].value, let r = rates[out.entries[i].key] {
                    out.entries[i].value = .number(v + r)
                }
            }
        }
        return out
    }

    /// Where `advanced` puts the new timestamp: the first `timestamp` member, when it equals
    /// `oldT` (and both are known).
    static func movedTimestamp(_ o: JSONObject, from oldT: JSONValue?, to newT: JSONValue?) -> (index: Int, value: JSONValue)? {
        guard let oldT, let newT, let i = o.entries.firstIndex(where: { $0.key == "timestamp" }), o.entries[i].value == oldT
        else { return nil }
        return (i, newT)
    }

    /// Each number's change from `old` to `new`, the next prediction's increments.
    static func changeRates(from old: JSONObject, to new: JSONObject) -> [String: Double] {
        changeRates(from: old, to: new, moved: nil)
    }

    /// `changeRates(from: advanced(old, …), to: new)` without the copy: `moved` is the member of
    /// `old` that `advanced` would replace, and its new value.
    static func changeRates(from old: JSONObject, to new: JSONObject, moved: (index: Int, value: JSONValue)?) -> [String: Double] {
        var rates: [String: Double] = [:]
        for e in new.entries {
            guard case .number(let b) = e.value else { continue }
            let before: JSONValue?
            if let moved, e.key == "timestamp" {
                before = moved.value  // `moved.index` is the first `timestamp` member, the one a lookup finds
            } else {
                before = old[e.key]
            }
            guard case .number(let a)? = before else { continue }
            let r = b - a
            if r != 0 && r.isFinite { rates[e.key] = r }
        }
        return rates
    }

    /// Fills `new.rates` from the previous snapshot (shared by encoder and decoder).
    static func computeRates(old: Snapshot, new: inout Snapshot) {
        var rates: [String: [String: Double]] = [:]
        for o in new.objects {
            guard let id = o["id"]?.stringValue, let oi = old.index[id] else { continue }
            let before = old.objects[oi]
            let r = changeRates(from: before, to: o, moved: movedTimestamp(before, from: old.t, to: new.t))
            if !r.isEmpty { rates[id] = r }
        }
        new.rates = rates
    }

    static func advanced(_ o: JSONObject, from oldT: JSONValue?, to newT: JSONValue?) -> JSONObject {
        guard let oldT, let newT, o["timestamp"] == oldT else { return o }
        var copy = o
        copy["timestamp"] = newT
        return copy
    }

    static func naturalOrder(old: Snapshot, newIDs: Set<String>, added: [String]) -> [String] {
        old.objects.compactMap { o -> String? in
            let id = o["id"]!.stringValue!
            return newIDs.contains(id) ? id : nil
        } + added
    }
}

extension JSONValue {
    /// The value as an integer when it is one exactly (|x| ≤ 2^53), for lossless increments.
    var exactInteger: Int64? {
        guard case .number(let d) = self, d.rounded() == d, abs(d) <= 9_007_199_254_740_992 else { return nil }
        return Int64(d)
    }
}

/// Why a delta record could not be restored.
public enum StatsDeltaError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The snapshot it applies to is missing (lost in a damaged segment, or the file was cut
    /// and concatenated). Records are skipped until the chain's next full snapshot.
    case missingBase(expected: Int64, have: Int64?)
    case malformed(String)
    /// The snapshot would hold more objects than the decoder's bound: the chain is dropped (its
    /// later deltas miss their base until a full snapshot within the bound).
    case tooManyObjects(count: Int, limit: Int)

    public var description: String {
        switch self {
        case .missingBase(let e, let h):
            "delta applies to snapshot \(e) but " + (h.map { "the last one seen is \($0)" } ?? "no full snapshot was seen")
        case .malformed(let m): "malformed delta: \(m)"
        case .tooManyObjects(let n, let limit):
            "the snapshot holds \(n) statistics objects, over the limit of \(limit) for one peer connection"
        }
    }
}

/// A snapshot as `StatsDeltaDecoder.restore` rebuilt it: indexed, with each number's change
/// since the snapshot it was restored from.
public struct RestoredSnapshot {
    var snapshot: Snapshot
    /// The objects of the snapshot the delta applied to; nil for a full record (no rates).
    var base: [JSONObject]?

    /// Whether the rates were computed from `objects`: the very same array (arrays are values,
    /// so one storage means the same objects; both are alive here, so no other array has its address).
    func restoredFrom(_ objects: [JSONObject]) -> Bool {
        guard let base, base.count == objects.count else { return false }
        return base.withUnsafeBufferPointer { a in objects.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
    }
}

/// Rebuilds full snapshots from a stream of full and delta records. One per log segment
/// (the reader resets it where the writer reset its encoder: at a new zstd frame or file).
public struct StatsDeltaDecoder {
    private var chains: [StatsChainKey: Snapshot] = [:]
    private var keysByCall = ChainKeysByCall()
    /// Snapshots with more objects are refused (`tooManyObjects`) and their chain dropped.
    public let maximumObjects: Int

    public init(maximumObjects: Int = .max) { self.maximumObjects = maximumObjects }

    public mutating func reset() {
        chains.removeAll(keepingCapacity: true)
        keysByCall.removeAll()
    }

    public mutating func forget(call: String) {
        for key in keysByCall.remove(call: call) { chains[key] = nil }
    }

    /// Forgets one chain: its next delta is refused as missing its base.
    public mutating func forget(chain key: StatsChainKey) { chains[key] = nil }

    /// The objects the chain's latest snapshot holds (0 when it holds none).
    public func objectCount(of key: StatsChainKey) -> Int { chains[key]?.objects.count ?? 0 }

    /// Returns `record` with a full `report`. Full records are remembered as the chain's base.
    public mutating func decode(_ record: LogRecord) throws(StatsDeltaError) -> LogRecord {
        try restore(record).record
    }

    /// `decode(record)`, with the snapshot the chain now holds when this record made it, for a
    /// `StatsDeltaEncoder` (`LogWriter.append(_:restored:)`) writing the record again.
    public mutating func restore(_ record: LogRecord) throws(StatsDeltaError) -> (record: LogRecord, snapshot: RestoredSnapshot?) {
        guard let key = StatsChainKey(record: record) else { return (record, nil) }
        let seq = record["seq"]?.exactInteger
        if case .array(let report)? = record["report"] {
            guard report.count <= maximumObjects else {
                chains[key] = nil
                throw .tooManyObjects(count: report.count, limit: maximumObjects)
            }
            let snapshot = Snapshot(report: report, seq: seq ?? 0)
            chains[key] = snapshot
            keysByCall.note(key)
            return (record, snapshot.map { RestoredSnapshot(snapshot: $0, base: nil) })
        }
        guard case .object(let delta)? = record["delta"] else { return (record, nil) }
        guard let base = record["base"]?.exactInteger, let seq else { throw .malformed("no seq/base") }
        if let current = chains[key], current.seq == seq, base != seq {
            // The latest delta written twice: the snapshot it made is still the chain's.
            var out = record
            out.body["delta"] = nil
            out.body["base"] = nil
            out.body["report"] = .array(current.report)
            return (out, nil)
        }
        guard let old = chains[key], old.seq == base else {
            let have = chains[key]?.seq
            chains[key] = nil
            throw .missingBase(expected: base, have: have)
        }
        let new = try StatsDeltaDecoder.apply(delta, to: old, seq: seq)
        guard new.objects.count <= maximumObjects else {
            chains[key] = nil
            throw .tooManyObjects(count: new.objects.count, limit: maximumObjects)
        }
        chains[key] = new
        var out = record
        out.body["delta"] = nil
        out.body["base"] = nil
        out.body["report"] = .array(new.report)
        return (out, RestoredSnapshot(snapshot: new, base: old.objects))
    }

    static func apply(_ d: JSONObject, to old: Snapshot, seq: Int64) throws(StatsDeltaError) -> Snapshot {
        let t = d["t"]
        var putByID: [String: JSONObject] = [:]
        var added: [String] = []
        if let put = d["put"] {
            guard case .array(let items) = put else { throw .malformed("put is not an array") }
            for item in items {
                guard case .object(let o) = item, let id = o["id"]?.stringValue else { throw .malformed("put item without id") }
                putByID[id] = o
                if old.index[id] == nil { added.append(id) }
            }
        }
        var deleted = Set<String>()
        if case .array(let ids)? = d["del"] { for v in ids { if let s = v.stringValue { deleted.insert(s) } } }
        let set = d["set"]?.objectValue ?? JSONObject()
        let inc = d["inc"]?.objectValue ?? JSONObject()
        let unset = d["unset"]?.objectValue ?? JSONObject()

        var objects = [JSONObject]()
        objects.reserveCapacity(old.objects.count + added.count)
        for o in old.objects {
            guard let id = o["id"]?.stringValue, !deleted.contains(id) else { continue }
            if let p = putByID[id] { objects.append(p); continue }
            var cur = StatsDeltaEncoder.expected(o, from: old.t, to: t, rates: old.rates[id])
            if case .array(let gone)? = unset[id] {
                let names = Set(gone.compactMap(\.stringValue))
                cur.entries.removeAll { names.contains($0.key) }
            }
            if case .object(let s)? = set[id] { merge(s, into: &cur) }
            if case .object(let n)? = inc[id] {
                for e in n.entries {
                    guard case .number(let a)? = cur[e.key], case .number(let b) = e.value else {
                        throw .malformed("inc on a non-number field \(e.key)")
                    }
                    cur[e.key] = .number(a + b)
                }
            }
            objects.append(cur)
        }
        for id in added { objects.append(putByID[id]!) }
        if case .array(let order)? = d["order"] {
            var byID: [String: JSONObject] = [:]
            for o in objects { byID[o["id"]!.stringValue!] = o }
            var reordered = [JSONObject]()
            for v in order {
                guard let id = v.stringValue, let o = byID[id] else { throw .malformed("order names an unknown id") }
                reordered.append(o)
            }
            objects = reordered
        }
        guard var snap = Snapshot(report: objects.map { .object($0) }, seq: seq) else { throw .malformed("duplicate ids") }
        StatsDeltaEncoder.computeRates(old: old, new: &snap)
        return snap
    }

    static func merge(_ changes: JSONObject, into target: inout JSONObject) {
        for e in changes.entries {
            if case .object(let nested) = e.value, case .object(var existing)? = target[e.key] {
                merge(nested, into: &existing)
                target[e.key] = .object(existing)
            } else {
                target[e.key] = e.value
            }
        }
    }
}

extension Double {
    /// ⌊log10 |x|⌋ for finite non-zero x, without Foundation.
    var log10Floor: Int {
        var x = abs(self), e = 0
        while x >= 10 { x /= 10; e += 1 }
        while x < 1 { x *= 10; e -= 1 }
        return e
    }
}

/// 10^n as a double, exact for the small n used here.
func pow10(_ n: Int) -> Double {
    var r = 1.0
    if n >= 0 { for _ in 0..<n { r *= 10 } } else { for _ in 0..<(-n) { r /= 10 } }
    return r
}
