/// Keyed pseudonyms of identifiers, and where identifiers are found in records: the one place
/// that `callstats analyze --pseudonymize-key` (`CallPseudonymizer`, on call material) and
/// `callstats serve --pseudonymize-key` (`RecordPrivacy`, on records before they are written)
/// take them from, so that both give the same pseudonyms and miss the same nothing.
///
/// What is replaced, and why each rule holds:
/// - **Identifying fields** (`isIdentifyingField`): a member whose name, lowercased with
///   everything but letters and digits removed, is a person field (`user`, `email`, `phone`,
///   `caller`, `displayName`, …, or any name containing `email`, `phone`, `msisdn`) or a
///   call-id field (`callId`, `sipCallId`), at any depth. Its value is replaced whatever its
///   type: a string by its pseudonym, a number by the pseudonym of its JSON text (a phone number
///   given as a number), an object or array by the pseudonym of its JSON text.
/// - **Known secrets in free text**: the call's own id (and the user part of a SIP Call-ID)
///   wherever it appears inside another string (`statusText`, `sipReason`, event details).
/// - **Shapes that name someone, in any string**: e-mail addresses and SIP URIs' `user@host`
///   (so a SIP Call-ID `user@host` too), `+` and 8-15 digits (an E.164 phone number).
/// - IP addresses stay the `Pseudonymizer`'s work.
///
/// A pseudonym is `anon-` and 16 hex digits of SipHash-2-4 under the key; text already of
/// that form is its own pseudonym, so records pseudonymised at the door and analysed with the
/// same key keep the ids they were written with (and a call posted to `serve` merges with the
/// same call analysed from an app's log).
public struct KeyedIdentifiers: Sendable {
    public let key: SipHashKey

    public init(key: SipHashKey) { self.key = key }

    /// Normalised person-field names (see `normalizedFieldName`).
    public static let personFieldNames: Set<String> = [
        "user", "userid", "username", "useremail", "userphone", "usernumber", "caller", "callerid", "callername",
        "callee", "calleeid", "calleename", "from", "to", "email", "emailaddress", "mail", "phone", "phonenumber",
        "mobile", "mobilenumber", "msisdn", "displayname", "name", "fullname", "firstname", "lastname", "nickname",
        "sipuri", "aor", "participant", "participantid", "customerid", "accountid",
    ]
    /// Parts that make any name a person field.
    static let personFieldParts = ["email", "phone", "msisdn"]
    /// Normalised names of fields that hold a call's own identifier (the capture's SIP Call-ID).
    public static let callIDFieldNames: Set<String> = ["callid", "sipcallid"]

    /// `name` lowercased, with everything but ASCII letters and digits removed: `e-mail`,
    /// `Email` and `E_Mail` are one name.
    public static func normalizedFieldName(_ name: String) -> String {
        var out = ""
        for b in name.utf8 {
            if b >= 0x41 && b <= 0x5A {
                out.unicodeScalars.append(Unicode.Scalar(b | 0x20))
            } else if (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) {
                out.unicodeScalars.append(Unicode.Scalar(b))
            }
        }
        return out
    }

    /// Whether a member of this name names a person.
    public static func isPersonField(_ name: String) -> Bool {
        let n = normalizedFieldName(name)
        return personFieldNames.contains(n) || personFieldParts.contains { n.contains($0) }
    }

    /// Whether a member of this name holds an identifier to replace whole.
    public static func isIdentifyingField(_ name: String) -> Bool {
        isPersonField(name) || callIDFieldNames.contains(normalizedFieldName(name))
    }

    /// The text a person field's value is matched and pseudonymised by: a string itself, any
    /// other value its JSON text; nil for null and booleans, which name no one.
    public static func identifyingText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): s
        case .null, .bool: nil
        case .number, .array, .object: value.serialized()
        }
    }

    /// Whether `text` already is a pseudonym (`anon-` and 16 lowercase hex digits).
    public static func isPseudonym(_ text: String) -> Bool {
        let u = Array(text.utf8)
        guard u.count == 21, u.starts(with: Array("anon-".utf8)) else { return false }
        return u[5...].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// The pseudonym of an identifier.
    public func identifier(_ text: String) -> String {
        if KeyedIdentifiers.isPseudonym(text) { return text }
        let h = SipHash24.hash(Array(text.utf8), key: key)
        let hex = String(h, radix: 16)
        return "anon-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The strings of a call's id to look for inside other text: the id, and the user part of
    /// a `user@host` id (a SIP Call-ID), each of at least 4 characters (shorter ones would
    /// match inside ordinary words).
    public static func secrets(ofCallID id: String) -> [String] {
        guard !isPseudonym(id), id != "-" else { return [] }
        var out: [String] = []
        if id.utf8.count >= 4 { out.append(id) }
        if let at = id.firstIndex(of: "@") {
            let user = String(id[..<at])
            if user.utf8.count >= 4 { out.append(user) }
        }
        return out
    }

    /// Replaces the values of identifying fields in `object` and everything inside it.
    @discardableResult
    public func replaceIdentifyingFields(in object: inout JSONObject) -> Bool {
        var changed = false
        for i in object.entries.indices {
            if KeyedIdentifiers.isIdentifyingField(object.entries[i].key) {
                guard let text = KeyedIdentifiers.identifyingText(object.entries[i].value) else { continue }
                object.entries[i].value = .string(identifier(text))
                changed = true
            } else if replaceIdentifyingFields(in: &object.entries[i].value) {
                changed = true
            }
        }
        return changed
    }

    @discardableResult
    public func replaceIdentifyingFields(in value: inout JSONValue) -> Bool {
        switch value {
        case .object(var o):
            value = .null
            let changed = replaceIdentifyingFields(in: &o)
            value = .object(o)
            return changed
        case .array(var a):
            value = .null
            var changed = false
            for i in a.indices where replaceIdentifyingFields(in: &a[i]) { changed = true }
            value = .array(a)
            return changed
        case .null, .bool, .number, .string:
            return false
        }
    }

    /// `text` with every occurrence of `secrets` and every e-mail address, SIP user part and
    /// E.164 number replaced by its pseudonym; nil when there was nothing to replace.
    public func scrubbed(_ text: String, secrets: [String]) -> String? {
        var s = text
        var changed = false
        for secret in secrets where KeyedIdentifiers.mayContain(s, secret) && s.contains(secret) {
            s = s.replacing(secret, with: identifier(secret))
            changed = true
        }
        if let t = replacingShapes(in: s) {
            s = t
            changed = true
        }
        return changed ? s : nil
    }

    /// False only when `text` cannot contain `secret` as `String.contains` finds it (by
    /// Characters, under canonical equivalence): both are ASCII and the secret's bytes do not
    /// occur in the text's. In ASCII text every Character is one byte (or CR LF), and no ASCII
    /// character has another canonically equivalent spelling, so a match of Characters is a
    /// match of bytes. Anything else may match: `String.contains` decides. Every string of every
    /// statistics report is asked this for the call's id, so it is a byte scan, not a
    /// Character search.
    static func mayContain(_ text: String, _ secret: String) -> Bool {
        var text = text
        var secret = secret
        return text.withUTF8 { t in
            secret.withUTF8 { s in
                guard !s.isEmpty, !t.contains(where: { $0 >= 0x80 }), !s.contains(where: { $0 >= 0x80 }) else { return true }
                guard s.count <= t.count else { return false }
                let first = s[0]
                var i = 0
                while i <= t.count - s.count {
                    if t[i] == first {
                        var k = 1
                        while k < s.count && t[i + k] == s[k] { k += 1 }
                        if k == s.count { return true }
                    }
                    i += 1
                }
                return false
            }
        }
    }

    /// Replaces, in every string inside `value`, what `scrubbed(_:secrets:)` replaces.
    @discardableResult
    public func scrub(_ value: inout JSONValue, secrets: [String]) -> Bool {
        switch value {
        case .string(let s):
            guard let t = scrubbed(s, secrets: secrets) else { return false }
            value = .string(t)
            return true
        case .array(var a):
            value = .null
            var changed = false
            for i in a.indices where scrub(&a[i], secrets: secrets) { changed = true }
            value = .array(a)
            return changed
        case .object(var o):
            value = .null
            let changed = scrub(&o, secrets: secrets)
            value = .object(o)
            return changed
        case .null, .bool, .number:
            return false
        }
    }

    @discardableResult
    public func scrub(_ object: inout JSONObject, secrets: [String], skipping: Set<String> = []) -> Bool {
        var changed = false
        for i in object.entries.indices where !skipping.contains(object.entries[i].key) {
            if scrub(&object.entries[i].value, secrets: secrets) { changed = true }
        }
        return changed
    }

    /// E-mail addresses (`local@domain.tld`, so SIP URIs' `user@host` and SIP Call-IDs too) and
    /// `+` followed by 8-15 digits, each replaced whole by its pseudonym.
    private func replacingShapes(in text: String) -> String? {
        var hasAt = false, hasPlus = false
        for b in text.utf8 {
            if b == UInt8(ascii: "@") { hasAt = true } else if b == UInt8(ascii: "+") { hasPlus = true }
        }
        guard hasAt || hasPlus else { return nil }
        let bytes = Array(text.utf8)
        var out = [UInt8]()
        var copied = 0, i = 0
        var changed = false
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        func isLocal(_ b: UInt8) -> Bool {
            isDigit(b) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || b == 0x2E || b == 0x5F || b == 0x25 || b == 0x2B || b == 0x2D
                || b >= 0x80
        }
        func replace(_ range: Range<Int>) {
            out.append(contentsOf: bytes[copied..<range.lowerBound])
            out.append(contentsOf: identifier(String(decoding: bytes[range], as: UTF8.self)).utf8)
            copied = range.upperBound
            changed = true
        }
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "@") {
                var start = i
                while start > copied, isLocal(bytes[start - 1]) { start -= 1 }
                var end = i + 1
                var dots = 0
                while end < bytes.count, isLocal(bytes[end]) || bytes[end] == UInt8(ascii: "-") {
                    if bytes[end] == UInt8(ascii: ".") { dots += 1 }
                    end += 1
                }
                while end > i + 1, bytes[end - 1] == UInt8(ascii: ".") { end -= 1; dots -= 1 }
                if start < i, end > i + 1, dots > 0 || end - i > 4 {
                    replace(start..<end)
                    i = end
                    continue
                }
            } else if bytes[i] == UInt8(ascii: "+"), i + 1 < bytes.count, isDigit(bytes[i + 1]),
                i == 0 || !isDigit(bytes[i - 1])
            {
                var end = i + 1
                while end < bytes.count, isDigit(bytes[end]) { end += 1 }
                if (8...15).contains(end - i - 1) {
                    replace(i..<end)
                    i = end
                    continue
                }
            }
            i += 1
        }
        guard changed else { return nil }
        out.append(contentsOf: bytes[copied...])
        return String(decoding: out, as: UTF8.self)
    }
}
