/// Pseudonymisation applied to a record before a producer writes it (`serve` at its door,
/// `import` as it converts a dump), with the options and results of
/// `callstats analyze --pseudonymize-key/--keep-address`: call ids, identifying fields (person
/// fields by a loose match of their name, whatever the value's type), the call's id inside
/// other text, e-mail addresses, SIP user parts and E.164 numbers are replaced by their keyed
/// pseudonyms (`KeyedIdentifiers`, the same as analyze's, so a call posted here and one analysed
/// with the key merge); peer-connection names too; IP addresses in every record (statistics
/// too, as the in-app collector does) go through CallLog's `Pseudonymizer` with the allow-list.
public struct RecordPrivacy: Sendable {
    public let identifiers: KeyedIdentifiers
    public let addresses: Pseudonymizer

    public init(key: SipHashKey, keepAddresses: [IPPrefix] = []) {
        identifiers = KeyedIdentifiers(key: key)
        addresses = Pseudonymizer(method: .keyedHash(key), allowList: keepAddresses)
    }

    public func identifier(_ text: String) -> String { identifiers.identifier(text) }

    public func apply(to record: LogRecord) -> LogRecord {
        var r = addresses.scrub(record)
        // `-` is the agent record's "no call", which readers recognise; it names no one.
        let secrets = KeyedIdentifiers.secrets(ofCallID: r.call)
        if r.call != "-" { r.call = identifier(r.call) }
        if r.kind == .stats {
            // A report's ids and types name objects, not people: only the connection's name and
            // text naming the call or someone are replaced (addresses were, above).
            if case .string(let pc)? = r.body["pc"], pc != "pc" { r.body["pc"] = .string(identifier(pc)) }
            identifiers.scrub(&r.body, secrets: secrets)
            return r
        }
        identifiers.replaceIdentifyingFields(in: &r.body)
        identifiers.scrub(&r.body, secrets: secrets, skipping: r.kind == .call ? ["sdkVersion", "appVersion"] : [])
        return r
    }
}
