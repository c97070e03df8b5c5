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
        var call: UnsafeBufferPointer<UInt8>?, action: UnsafeBufferPointer<UInt8>?, type: UnsafeBufferPointer<UInt8>?
        var ts: Int64?
        var seen = 0
        do throws(JSONCursor.ScanError) {
            try c.object { cur, key throws(JSONCursor.ScanError) in
                let member: Int
                switch key.count {
                case 1 where key[0] == UInt8(ascii: "v"):
                    member = 1
                    guard try PlainEvent.integer(&cur) == 1 else { throw cur.fail("not version 1") }
                case 4 where JSONCursor.equals(key, "kind"):
                    member = 2
                    guard JSONCursor.equals(try cur.rawString(), "event") else { throw cur.fail("not an event") }
                case 4 where JSONCursor.equals(key, "call"): member = 4; call = try cur.rawString()
                case 2 where JSONCursor.equals(key, "ts"): member = 8; ts = try PlainEvent.integer(&cur)
                case 6 where JSONCursor.equals(key, "action"): member = 16; action = try cur.rawString()
                case 4 where JSONCursor.equals(key, "type"): member = 32; type = try cur.rawString()
                default: throw cur.fail("another member")
                }
                guard seen & member == 0 else { throw cur.fail("repeated member") }
                seen |= member
            }
            c.skipSpace()
        } catch {
            return nil
        }
        guard c.pos == c.end, seen == 63, let call, !call.isEmpty, let action, let type, let ts,
              PlainEvent.isPlain(call), PlainEvent.isPlain(action), PlainEvent.isPlain(type),
              let time = EpochMilliseconds.from(Double(ts)) else { return nil }
        self.call = String(decoding: call, as: UTF8.self)
        self.ts = time
        self.action = String(decoding: action, as: UTF8.self)
        self.type = String(decoding: type, as: UTF8.self)
    }

    /// A JSON integer without sign, leading zero, fraction or exponent, of up to 16 digits;
    /// anything else fails (and the complete parser takes the line).
    private static func integer(_ c: inout JSONCursor) throws(JSONCursor.ScanError) -> Int64 {
        let first = try c.peek()
        guard first &- 0x31 < 9 else { throw c.fail("not a plain integer") }
        var value: Int64 = 0
        var digits = 0
        while c.pos < c.end, c.base[c.pos] &- 0x30 < 10 {
            guard digits < 16 else { throw c.fail("too long") }
            value = value * 10 + Int64(c.base[c.pos] &- 0x30)
            digits += 1
            c.pos += 1
        }
        guard c.pos == c.end || !JSONCursor.continuesNumber(c.base[c.pos]) else { throw c.fail("not a plain integer") }
        return value
    }

    /// Printable ASCII without a backslash: the bytes are the string.
    private static func isPlain(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
        s.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }
    }
}

extension CallMaterial {
    /// What `add(_:)` does with the same record read by the complete parser.
    mutating func add(_ e: PlainEvent) {
        touch(e.ts)
        addEvent(at: e.ts, action: e.action, type: e.type, detailJSON: "{}")
    }
}
