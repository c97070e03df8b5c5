import CallLog

/// Privacy at analysis time (`callstats analyze --pseudonymize-key`): each call is rewritten
/// before it is analysed and stored, so neither the database nor its stored call material holds
/// the original identifiers.
///
/// - The call id becomes its keyed pseudonym (`KeyedIdentifiers`, shared with `serve`): the
///   same id and key always give the same pseudonym, so a call split over files or runs still
///   merges, and two databases made with one key can be joined.
/// - In the `call` record, events, quality callbacks and the end: identifying fields at any
///   depth (person fields by a loose match of their name, whatever the value's type; the SIP
///   Call-ID), the call's own id inside other text, e-mail addresses and SIP user parts, E.164
///   numbers, and IP addresses (the collector's `Pseudonymizer`, except allow-listed prefixes).
/// - Peer-connection names, which become part of stream ids, are pseudonymised (in snapshots
///   and in the events that name them alike); a captured
///   stream's id (`wire:<src>><dst>:…`) keeps its ports with its addresses pseudonymised.
///
/// Statistics need nothing more: a snapshot keeps numbers, codec and candidate types only.
public struct CallPseudonymizer: Sendable {
    public let addresses: Pseudonymizer
    public let identifiers: KeyedIdentifiers

    public init(key: SipHashKey, keepAddresses: [IPPrefix] = []) {
        identifiers = KeyedIdentifiers(key: key)
        addresses = Pseudonymizer(method: .keyedHash(key), allowList: keepAddresses)
    }

    /// What a database records of the key (`meta.pseudonymization_key`): a keyed hash of a fixed
    /// text under it, the same for one key and different for another, from which the key cannot
    /// be recovered.
    public var keyFingerprint: String {
        let hash = SipHash24.hash(Array("callstats pseudonymization key fingerprint".utf8), key: identifiers.key)
        let hex = String(hash, radix: 16)
        return "siphash24:" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The pseudonym of an identifier.
    public func identifier(_ text: String) -> String { identifiers.identifier(text) }

    public func apply(to material: CallMaterial) -> CallMaterial {
        var m = material
        let secrets = KeyedIdentifiers.secrets(ofCallID: material.callID)
        m.callID = identifier(material.callID)
        if var info = m.info {
            identifiers.replaceIdentifyingFields(in: &info)
            identifiers.scrub(&info, secrets: secrets, skipping: ["sdkVersion", "appVersion"])
            addresses.scrub(&info, skipping: ["sdkVersion", "appVersion"])
            m.info = info
        }
        if var end = m.end {
            scrub(&end, secrets: secrets)
            m.end = end
        }
        m.events = m.events.map { e in
            var e = e
            e.callID = m.callID
            e.action = text(e.action, secrets: secrets)
            e.type = text(e.type, secrets: secrets)
            if case .object(var detail)? = try? JSONValue.parse(e.detailJSON) {
                // The pc an event names (its own `pc` or its detail's) becomes the pseudonym its
                // snapshots' pc gets, so that the analysis still finds which pc it concerns.
                let pc = detail["pc"]?.stringValue, innerPC = detail["detail"]?["pc"]?.stringValue
                var changed = scrub(&detail, secrets: secrets)
                if let pc, streamName(pc, pc: pc) != pc {
                    detail["pc"] = .string(streamName(pc, pc: pc))
                    changed = true
                }
                if let innerPC, streamName(innerPC, pc: innerPC) != innerPC, case .object(var inner)? = detail["detail"] {
                    inner["pc"] = .string(streamName(innerPC, pc: innerPC))
                    detail["detail"] = .object(inner)
                    changed = true
                }
                if changed { e.detailJSON = JSONValue.object(detail).serialized() }
            }
            return e
        }
        if !m.snapshots.isEmpty {
            var names: [String: String] = [:]
            func renamed(_ id: String, pc: String) -> String {
                if let known = names[id] { return known }
                let new = streamName(id, pc: pc)
                names[id] = new
                return new
            }
            for i in m.snapshots.indices {
                let pc = m.snapshots[i].peerConnection
                for j in m.snapshots[i].streams.indices {
                    m.snapshots[i].streams[j].streamID = renamed(m.snapshots[i].streams[j].streamID, pc: pc)
                }
                m.snapshots[i].peerConnection = renamed(pc, pc: pc)
            }
        }
        return m
    }

    /// The path a file is entered in the ledger under: its folder, and its name's pseudonym with
    /// the name's extensions (`logs/anon-….ndjson.zst`). A log's name often is its call's id
    /// (`callstats import` names files so), and the same file must get the same entry whichever
    /// reader reads which of its calls, so the name is replaced whole, whatever it holds.
    public func ledgerPath(_ path: String) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let name = path[slash...]
        var stem = Substring(name), extensions = Substring("")
        for ext in [".ndjson.zst", ".jsonl.zst", ".ndjson", ".jsonl"] where name.hasSuffix(ext) {
            stem = name.dropLast(ext.count)
            extensions = name.suffix(ext.count)
            break
        }
        return String(path[..<slash]) + identifier(String(stem)) + extensions
    }

    /// Identifying fields, secrets, shapes and addresses replaced in one record's fields.
    @discardableResult
    private func scrub(_ object: inout JSONObject, secrets: [String]) -> Bool {
        let a = identifiers.replaceIdentifyingFields(in: &object)
        let b = identifiers.scrub(&object, secrets: secrets)
        let c = addresses.scrub(&object)
        return a || b || c
    }

    private func text(_ s: String, secrets: [String]) -> String {
        let t = identifiers.scrubbed(s, secrets: secrets) ?? s
        return addresses.scrubbed(t) ?? t
    }

    /// A stream id or peer-connection name with the peer connection's name pseudonymised:
    /// `<pc>:…` keeps what follows the name; a captured one (`wire:…`) keeps its shape and
    /// ports with each address pseudonymised. `pc`, the name given when a record names none,
    /// names no one and stays.
    func streamName(_ id: String, pc: String) -> String {
        if pc.hasPrefix("wire:") || id.hasPrefix("wire:") { return endpointsScrubbed(id) }
        guard pc != "pc" else { return id }
        if id == pc { return identifier(pc) }
        if id.hasPrefix(pc + ":") { return identifier(pc) + id.dropFirst(pc.count) }
        return identifier(id)
    }

    /// Every IPv4 address (a run of digits and dots) and bracketed IPv6 address in `text`
    /// replaced by its pseudonym.
    func endpointsScrubbed(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out = [UInt8]()
        var i = 0, copied = 0
        func put(_ range: Range<Int>, _ address: IPAddress) {
            let p = addresses.pseudonym(for: address)
            guard p != address else { return }
            out.append(contentsOf: bytes[copied..<range.lowerBound])
            out.append(contentsOf: p.description.utf8)
            copied = range.upperBound
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "["), let close = bytes[(i + 1)...].firstIndex(of: UInt8(ascii: "]")) {
                if let a = IPAddress(utf8: bytes[(i + 1)..<close]) { put((i + 1)..<close, a) }
                i = close + 1
            } else if b >= 0x30 && b <= 0x39 {
                var j = i
                while j < bytes.count, (bytes[j] >= 0x30 && bytes[j] <= 0x39) || bytes[j] == UInt8(ascii: ".") { j += 1 }
                if let a = IPAddress(utf8: bytes[i..<j]), a.isV4 { put(i..<j, a) }
                i = j
            } else {
                i += 1
            }
        }
        out.append(contentsOf: bytes[copied...])
        return String(decoding: out, as: UTF8.self)
    }
}
