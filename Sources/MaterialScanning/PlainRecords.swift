import CallLog

/// The event record as SDK adapters write nearly all of them,
/// `{"v":1,"kind":"event","call":"…","ts":…,"action":"…","type":"…"}` and nothing more, read
/// straight from the bytes.
///
/// On a day of many short calls these are most of the records, and building a JSON tree for each
/// cost about a tenth of the analysis. Anything outside that shape (another member, an escape or
/// a non-ASCII byte in a string, a `ts` that is not a plain integer, a repeated member) is left to
/// the complete parser, which makes the same event of the records accepted here.
struct PlainEvent {
    var call: String
    var ts: Int64
    var action: String
    var type: String

    static let prefix = Array(#"{"v":1,"kind":"event","#.utf8)

    /// The event, or nil when the line is not exactly of that shape.
    init?(_ line: UnsafeBufferPointer<UInt8>) {
        var c = JSONCursor(line)
        var envelope = PlainEnvelope(kind: "event")
        var action: UnsafeBufferPointer<UInt8>?, type: UnsafeBufferPointer<UInt8>?
        var seen = 0
        do throws(JSONCursor.ScanError) {
            try c.object { cur, key throws(JSONCursor.ScanError) in
                if try envelope.read(&cur, key: key) { return }
                let member: Int
                switch key.count {
                case 6 where JSONCursor.equals(key, "action"): member = 1; action = try cur.rawString()
                case 4 where JSONCursor.equals(key, "type"): member = 2; type = try cur.rawString()
                default: throw cur.fail("another member")
                }
                guard seen & member == 0 else { throw cur.fail("repeated member") }
                seen |= member
            }
            c.skipSpace()
        } catch {
            return nil
        }
        guard c.pos == c.end, seen == 3, let (call, time) = envelope.complete, let action, let type,
            PlainJSON.isPlain(action), PlainJSON.isPlain(type)
        else { return nil }
        self.call = call
        self.ts = time
        self.action = String(decoding: action, as: UTF8.self)
        self.type = String(decoding: type, as: UTF8.self)
    }
}

/// The pieces of JSON that plain records are made of, read so that their bytes are also what
/// the complete parser's writer writes for them.
enum PlainJSON {
    /// A JSON integer without sign, fraction or exponent, 0 or without a leading zero, of up to
    /// 16 digits; anything else fails (and the complete parser takes the line).
    static func integer(_ c: inout JSONCursor) throws(JSONCursor.ScanError) -> Int64 {
        let first = try c.peek()
        guard first &- 0x30 < 10 else { throw c.fail("not a plain integer") }
        var value: Int64 = 0
        var digits = 0
        while c.pos < c.end, c.base[c.pos] &- 0x30 < 10 {
            guard digits < 16, digits == 0 || first != 0x30 else { throw c.fail("not a plain integer") }
            value = value * 10 + Int64(c.base[c.pos] &- 0x30)
            digits += 1
            c.pos += 1
        }
        guard c.pos == c.end || !JSONCursor.continuesNumber(c.base[c.pos]) else { throw c.fail("not a plain integer") }
        return value
    }

    /// Printable ASCII without a backslash: the bytes are the string.
    static func isPlain(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
        s.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }
    }
}

/// The members every plain record has, `v` (1), `kind`, `call` and `ts`, each once: the reading
/// that `PlainEvent` and `PlainQuality` share.
struct PlainEnvelope {
    let kind: StaticString
    private var seen = 0
    private var call: UnsafeBufferPointer<UInt8>?
    private var ts: Int64?

    init(kind: StaticString) { self.kind = kind }

    /// Reads the member `key` when it is one of the envelope's (true), or leaves it (false).
    mutating func read(_ cur: inout JSONCursor, key: UnsafeBufferPointer<UInt8>) throws(JSONCursor.ScanError) -> Bool {
        let member: Int
        switch key.count {
        case 1 where key[0] == UInt8(ascii: "v"):
            member = 1
            guard try PlainJSON.integer(&cur) == 1 else { throw cur.fail("not version 1") }
        case 4 where JSONCursor.equals(key, "kind"):
            member = 2
            guard JSONCursor.equals(try cur.rawString(), kind) else { throw cur.fail("another kind") }
        case 4 where JSONCursor.equals(key, "call"): member = 4; call = try cur.rawString()
        case 2 where JSONCursor.equals(key, "ts"): member = 8; ts = try PlainJSON.integer(&cur)
        default: return false
        }
        guard seen & member == 0 else { throw cur.fail("repeated member") }
        seen |= member
        return true
    }

    /// The call and time, once all four members were read and the call is a plain, non-empty
    /// string and the time is epoch milliseconds.
    var complete: (call: String, ts: Int64)? {
        guard seen == 15, let call, !call.isEmpty, PlainJSON.isPlain(call), let ts,
            let time = EpochMilliseconds.from(Double(ts))
        else { return nil }
        return (String(decoding: call, as: UTF8.self), time)
    }
}

/// The quality callback as SDK adapters write it, `{"v":1,"kind":"quality","call":"…","ts":…,`
/// then members such as `"score":97,"direction":"inbound","source":"…"}`, read straight from the
/// bytes. On a simulated day they are a third of the records that are not statistics.
///
/// Past the envelope every member must have a plain key and a plain string or a non-negative
/// integer of up to 15 digits (exact as a Double): the event's detail is then those members
/// written as the complete parser's record writes them. Anything else (a fraction, a sign, an
/// escape, a nested value, a repeated key) is left to the complete parser.
struct PlainQuality {
    var call: String
    var ts: Int64
    /// The `score` member when it is an integer (the event's type), else nil.
    var score: Int64?
    var detailJSON: String

    static let prefix = Array(#"{"v":1,"kind":"quality","#.utf8)

    /// The record, or nil when the line is not exactly of that shape.
    init?(_ line: UnsafeBufferPointer<UInt8>) {
        var c = JSONCursor(line)
        var envelope = PlainEnvelope(kind: "quality")
        var score: Int64?
        var keys: [UnsafeBufferPointer<UInt8>] = []
        keys.reserveCapacity(8)
        // The detail is never longer than the line: one allocation, not one per member.
        var detail: [UInt8] = []
        detail.reserveCapacity(line.count)
        detail.append(UInt8(ascii: "{"))
        do throws(JSONCursor.ScanError) {
            try c.object { cur, key throws(JSONCursor.ScanError) in
                if try envelope.read(&cur, key: key) { return }
                guard PlainJSON.isPlain(key), !keys.contains(where: { $0.elementsEqual(key) }) else {
                    throw cur.fail("not a plain member")
                }
                keys.append(key)
                if detail.count > 1 { detail.append(UInt8(ascii: ",")) }
                detail.append(UInt8(ascii: "\""))
                detail.append(contentsOf: key)
                detail.append(contentsOf: #"":"#.utf8)
                if try cur.peek() == UInt8(ascii: "\"") {
                    let value = try cur.rawString()
                    guard PlainJSON.isPlain(value) else { throw cur.fail("not a plain string") }
                    detail.append(UInt8(ascii: "\""))
                    detail.append(contentsOf: value)
                    detail.append(UInt8(ascii: "\""))
                } else {
                    let start = cur.pos  // past any space: `peek` skipped it
                    let n = try PlainJSON.integer(&cur)
                    guard cur.pos - start <= 15 else { throw cur.fail("not exact as a Double") }
                    detail.append(contentsOf: UnsafeBufferPointer(start: cur.base + start, count: cur.pos - start))
                    if JSONCursor.equals(key, "score") { score = n }
                }
            }
            c.skipSpace()
        } catch {
            return nil
        }
        detail.append(UInt8(ascii: "}"))
        guard c.pos == c.end, let (call, time) = envelope.complete else { return nil }
        self.call = call
        self.ts = time
        self.score = score
        detailJSON = String(decoding: detail, as: UTF8.self)
    }
}

extension CallMaterial {
    /// What `add(_:)` does with the same record read by the complete parser.
    mutating func add(_ e: PlainEvent) {
        touch(e.ts)
        addEvent(at: e.ts, action: e.action, type: e.type, detailJSON: "{}")
    }

    /// What `add(_:)` does with the same record read by the complete parser.
    mutating func add(_ q: PlainQuality) {
        touch(q.ts)
        events.append(
            CallEvent(
                callID: callID, ts: q.ts, kind: "quality", action: "quality",
                type: q.score.map { String($0) } ?? "", detailJSON: q.detailJSON))
    }
}
