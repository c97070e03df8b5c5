import CallLog

/// Pseudonymisation applied before a posted record is written, with the options and results of
/// `callstats analyze --pseudonymize-key/--keep-address`: call ids become `anon-` and 16 hex
/// digits of SipHash-2-4 under the key (the same pseudonym analyze gives, so a call posted here
/// and one analysed with the key merge), person fields of `call` records and their labels are
/// replaced the same way, and IP addresses in every record (statistics too, as the in-app
/// collector does) go through CallLog's `Pseudonymizer` with the allow-list.
public struct DoorPrivacy: Sendable {
    public let key: SipHashKey
    public let addresses: Pseudonymizer

    /// `call` record and label fields whose values identify a person (as analyze's).
    public static let personFields: Set<String> = [
        "user", "userId", "username", "caller", "callee", "from", "to", "email", "phone", "msisdn", "displayName",
    ]

    public init(key: SipHashKey, keepAddresses: [IPPrefix] = []) {
        self.key = key
        addresses = Pseudonymizer(method: .keyedHash(key), allowList: keepAddresses)
    }

    public func identifier(_ text: String) -> String {
        let h = SipHash24.hash(Array(text.utf8), key: key)
        let hex = String(h, radix: 16)
        return "anon-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    public func apply(to record: LogRecord) -> LogRecord {
        var r = addresses.scrub(record)
        // `-` is the agent record's "no call", which readers recognise; it names no one.
        if r.call != "-" { r.call = identifier(r.call) }
        if r.kind == .call {
            replacePersons(in: &r.body)
            if case .object(var labels)? = r.body["labels"] {
                replacePersons(in: &labels)
                r.body["labels"] = .object(labels)
            }
        }
        return r
    }

    private func replacePersons(in object: inout JSONObject) {
        for i in object.entries.indices where DoorPrivacy.personFields.contains(object.entries[i].key) {
            if case .string(let s) = object.entries[i].value { object.entries[i].value = .string(identifier(s)) }
        }
    }
}
