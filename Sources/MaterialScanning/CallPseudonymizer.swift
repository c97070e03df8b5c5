import CallLog

/// Privacy at analysis time (`callstats analyze --pseudonymize-key`): each call is rewritten
/// before it is analysed and stored, so neither the database nor its stored call material holds
/// the original identifiers.
///
/// - The call id becomes `anon-` and 16 hex digits of a keyed SipHash-2-4: the same id and key
///   always give the same pseudonym, so a call split over files or runs still merges, and two
///   databases made with one key can be joined.
/// - Fields of the `call` record (and of its `labels`) that name a person are replaced the same
///   way (`personFields`), and so is its `callId` (the SDK's or SIP call id, which can hold a
///   host name or number): keyed, so the legs of one conversation still share it.
/// - IP addresses anywhere in call, event, quality and end records are replaced by the
///   collector's `Pseudonymizer` (keyed hash into reserved ranges), except allow-listed prefixes.
///
/// Statistics need nothing: the analyser keeps no address from them (candidate types only).
public struct CallPseudonymizer: Sendable {
    public let addresses: Pseudonymizer
    private let key: SipHashKey

    /// `call` record and label fields whose values identify a person.
    public static let personFields: Set<String> = [
        "user", "userId", "username", "caller", "callee", "from", "to", "email", "phone", "msisdn", "displayName",
    ]

    public init(key: SipHashKey, keepAddresses: [IPPrefix] = []) {
        self.key = key
        addresses = Pseudonymizer(method: .keyedHash(key), allowList: keepAddresses)
    }

    /// The pseudonym of an identifier.
    public func identifier(_ text: String) -> String {
        let h = SipHash24.hash(Array(text.utf8), key: key)
        let hex = String(h, radix: 16)
        return "anon-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    public func apply(to material: CallMaterial) -> CallMaterial {
        var m = material
        m.callID = identifier(material.callID)
        if var info = m.info {
            replacePersons(in: &info)
            if case .string(let id)? = info["callId"] { info["callId"] = .string(identifier(id)) }
            if case .object(var labels)? = info["labels"] {
                replacePersons(in: &labels)
                info["labels"] = .object(labels)
            }
            addresses.scrub(&info, skipping: ["sdkVersion", "appVersion"])
            m.info = info
        }
        if var end = m.end {
            addresses.scrub(&end)
            m.end = end
        }
        m.events = m.events.map { e in
            var e = e
            e.callID = m.callID
            if var detail = try? JSONValue.parse(e.detailJSON), addresses.scrub(&detail) { e.detailJSON = detail.serialized() }
            return e
        }
        return m
    }

    private func replacePersons(in object: inout JSONObject) {
        for i in object.entries.indices where CallPseudonymizer.personFields.contains(object.entries[i].key) {
            if case .string(let s) = object.entries[i].value { object.entries[i].value = .string(identifier(s)) }
        }
    }
}
