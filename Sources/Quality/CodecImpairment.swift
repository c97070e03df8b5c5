/// Version of every constant in this module that changes stored scores (E-model defaults, codec table,
/// video score coefficients). Store it with each score row; bump it whenever one of
/// those values changes so old and new rows are never compared blindly.
package enum QualityModel {
    package static let modelVersion = "callstats-quality-1 (G.107-2015 NB; codecs 1; video 1)"
}

/// Equipment impairment Ie and packet-loss robustness Bpl of a codec, the codec inputs of the E-model.
package struct CodecImpairment: Sendable, Equatable, Hashable {
    /// Where a value comes from, so a stored score can say how much weight it carries.
    package enum Source: String, Sendable {
        /// ITU-T G.113 Appendix I.
        case g113
        /// Ie from G.113, Bpl from a widely used implementation (G.113 gives none).
        case g113WithImplementationBpl
        /// No ITU-T value exists; a convention of this module, documented on the constant.
        case convention
    }

    /// Short display name, e.g. "G.711 + PLC".
    package var name: String
    /// Ie.
    package var equipmentImpairment: Double
    /// Bpl (random loss).
    package var packetLossRobustness: Double
    package var source: Source

    package init(name: String, equipmentImpairment: Double, packetLossRobustness: Double, source: Source) {
        self.name = name
        self.equipmentImpairment = equipmentImpairment
        self.packetLossRobustness = packetLossRobustness
        self.source = source
    }

    /// G.711 with the packet-loss concealment of G.711 Appendix I. Used for PCMU/PCMA: every WebRTC and
    /// most SIP endpoints conceal lost G.711 frames.
    package static let g711WithPLC = CodecImpairment(
        name: "G.711 + PLC", equipmentImpairment: 0, packetLossRobustness: 25.1, source: .g113)
    /// G.711 without concealment (lost frames played as silence).
    package static let g711WithoutPLC = CodecImpairment(
        name: "G.711", equipmentImpairment: 0, packetLossRobustness: 4.3, source: .g113)
    /// G.729 Annex A (+VAD), 8 kbit/s.
    package static let g729A = CodecImpairment(
        name: "G.729A", equipmentImpairment: 11, packetLossRobustness: 19.0, source: .g113)
    /// G.729 (full complexity), 8 kbit/s: Ie 10. G.113 lists no Bpl for it; G.729A's 19.0 is borrowed
    /// because both share the frame structure and concealment (a convention).
    package static let g729 = CodecImpairment(
        name: "G.729", equipmentImpairment: 10, packetLossRobustness: 19.0, source: .convention)
    /// G.723.1 at 6.3 kbit/s (+VAD).
    package static let g723_1 = CodecImpairment(
        name: "G.723.1 6.3", equipmentImpairment: 15, packetLossRobustness: 16.1, source: .g113)
    /// GSM 06.10 full rate: Ie 20 from G.113; Bpl 10 as used by OPAL.
    package static let gsmFullRate = CodecImpairment(
        name: "GSM FR", equipmentImpairment: 20, packetLossRobustness: 10, source: .g113WithImplementationBpl)
    /// Opus, scored on the narrow-band scale as "G.711 + PLC equivalent" (Ie 0, Bpl 25.1).
    ///
    /// Convention: there is no ITU-T Ie/Bpl for Opus. Feeding post-recovery loss (concealment ratio) means
    /// in-band FEC, RED and NACK are already credited in Ppl, so no extra robustness is assumed here.
    package static let opus = CodecImpairment(
        name: "Opus", equipmentImpairment: 0, packetLossRobustness: 25.1, source: .convention)
    /// G.722, treated like Opus: "G.711 + PLC equivalent" on the narrow-band scale (convention).
    package static let g722 = CodecImpairment(
        name: "G.722", equipmentImpairment: 0, packetLossRobustness: 25.1, source: .convention)
    /// iLBC, scored as G.729A (Ie 11, Bpl 19.0).
    ///
    /// Convention: iLBC is a narrow-band low-rate codec whose clean-channel quality is usually placed near
    /// G.729A. Its independently decodable frames would justify a higher Bpl; 19.0 is the conservative choice.
    package static let iLBC = CodecImpairment(
        name: "iLBC", equipmentImpairment: 11, packetLossRobustness: 19.0, source: .convention)

    /// Every codec of the table.
    package static let all: [CodecImpairment] = [
        g711WithPLC, g711WithoutPLC, g729A, g729, g723_1, gsmFullRate, opus, g722, iLBC,
    ]

    /// Parameters for a codec named by a W3C `mimeType` ("audio/opus"), an SDP rtpmap entry
    /// ("PCMU/8000") or a plain name ("G.729", "ilbc"); case-insensitive.
    ///
    /// The RTP name "G729" covers both G.729 and Annex A and is mapped to G.729A, which is what deployed
    /// endpoints almost always run. Returns nil for unknown codecs and for non-speech payloads
    /// (telephone-event, CN, RED), which must be resolved to the primary codec by the caller.
    package static func lookup(_ codecName: String) -> CodecImpairment? {
        // The names browsers and SDKs send, as they send them (this runs for every interval).
        switch codecName {
        case "opus", "audio/opus": return .opus
        case "PCMU", "PCMA", "audio/PCMU", "audio/PCMA": return .g711WithPLC
        default: break
        }
        let parts = codecName.lowercased().split(separator: "/", omittingEmptySubsequences: true)
        guard var name = parts.first.map(String.init) else { return nil }
        if name == "audio" {
            guard parts.count > 1 else { return nil }
            name = String(parts[1])
        }
        name.removeAll { " .-_\t".contains($0) }
        switch name {
        case "pcmu", "pcma", "g711", "g711u", "g711a", "g711mu", "g711ulaw", "g711alaw":
            return .g711WithPLC
        case "g729", "g729a", "g729b", "g729ab":
            return .g729A
        case "g723", "g7231":
            return .g723_1
        case "gsm", "gsmfr":
            return .gsmFullRate
        case "opus":
            return .opus
        case "g722":
            return .g722
        case "ilbc":
            return .iLBC
        default:
            return nil
        }
    }
}
