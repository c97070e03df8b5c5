import CallLog
/// One `m=` section of an SDP body, with the connection address that applies to it.
public struct SDPMedia: Equatable, Sendable {
    public var media: String
    public var address: IPAddress?
    public var port: UInt16
    public var transport: String
    public var formats: [UInt8]
    /// `a=rtpmap` entries by payload type.
    public var rtpmap: [UInt8: PayloadFormat]
    /// `a=rtcp:` port, when given.
    public var rtcpPort: UInt16?
    public var rtcpMux: Bool

    /// RTP/AVP, RTP/SAVP, UDP/TLS/RTP/SAVPF and the like; not udptl (T.38) or others.
    public var isRTP: Bool { transport.uppercased().contains("RTP") }
    public var isSecure: Bool { transport.uppercased().contains("SAVP") }
}

/// The parts of a SIP message that name a call and its media.
public struct SIPMessage: Equatable, Sendable {
    /// Request method, or nil for a response.
    public var method: String?
    public var statusCode: Int?
    public var callID: String?
    public var media: [SDPMedia]

    static let methods: [[UInt8]] = [
        "INVITE ", "ACK ", "BYE ", "CANCEL ", "OPTIONS ", "REGISTER ", "PRACK ", "SUBSCRIBE ",
        "NOTIFY ", "PUBLISH ", "INFO ", "REFER ", "MESSAGE ", "UPDATE ", "SIP/2.0 ",
    ].map { Array($0.utf8) }

    /// Starts with a SIP method and a space, or with `SIP/2.0 `.
    package static func startsLikeSIP(_ p: UnsafeRawBufferPointer) -> Bool {
        guard p.count >= 8 else { return false }
        let first = p.u8(0)
        guard first >= 0x41 && first <= 0x55 else { return false }
        outer: for m in methods where p.count >= m.count && m[0] == first {
            for i in 1..<m.count where p.u8(i) != m[i] { continue outer }
            return true
        }
        return false
    }

    /// UDP ports of the gateway-control protocols that also carry SDP: MGCP (2427, 2727) and
    /// Megaco/H.248 text (2944, 2945).
    public static let gatewayControlPorts: Set<UInt16> = [2427, 2727, 2944, 2945]

    /// Parses a SIP message; with `anyText`, any text message with an SDP body (MGCP's
    /// `C:` call identifier is then taken as the Call-ID).
    public static func parse(_ p: UnsafeRawBufferPointer, anyText: Bool = false) -> SIPMessage? {
        guard anyText || startsLikeSIP(p) else { return nil }
        // Split on LF bytes: as Characters, "\r\n" is one grapheme and never equals "\n".
        var lines: [Substring] = []
        var start = 0
        for i in 0...p.count where i == p.count || p.u8(i) == 0x0A {
            var end = i
            if end > start, p.u8(end - 1) == 0x0D { end -= 1 }
            lines.append(Substring(String(decoding: p.slice(from: start, count: end - start), as: UTF8.self)))
            start = i + 1
        }
        guard let first = lines.first else { return nil }
        var message = SIPMessage(method: nil, statusCode: nil, callID: nil, media: [])
        if first.hasPrefix("SIP/2.0 ") {
            message.statusCode = Int(first.dropFirst(8).prefix(3))
        } else {
            message.method = String(first.prefix(while: { $0 != " " }))
        }
        lines.removeFirst()
        var bodyStart: Int?
        var isSDP = false
        for (i, line) in lines.enumerated() {
            if line.isEmpty { bodyStart = i + 1; break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingSpaces().lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            switch name {
            case "call-id", "i": message.callID = String(value)
            case "c" where anyText && !value.contains("/"): message.callID = "mgcp:" + value
            case "content-type", "c": isSDP = value.lowercased().hasPrefix("application/sdp")
            default: break
            }
        }
        if let bodyStart, isSDP || lines.dropFirst(bodyStart).first?.hasPrefix("v=0") == true {
            message.media = parseSDP(lines.dropFirst(bodyStart))
        } else if anyText, let v = lines.firstIndex(where: { $0.hasSuffix("v=0") }) {
            // Megaco puts SDP inside "Local { … }" descriptors, indented.
            message.media = parseSDP(lines[v...])
        }
        return message
    }

    /// Reads `c=`, `m=` and `a=` lines. Several sessions may follow one another (Megaco's
    /// local and remote descriptors, each opened by `v=0` and wrapped in `L{…}` / `R{…}`).
    static func parseSDP(_ lines: ArraySlice<Substring>) -> [SDPMedia] {
        var sessionAddress: IPAddress?
        var media: [SDPMedia] = []
        var current: Int?
        for raw in lines {
            var line = raw.trimmingSpaces()
            if let brace = line.lastIndex(of: "{") { line = line[line.index(after: brace)...] }
            while line.last == "}" { line = line.dropLast() }
            guard line.count >= 2, line.dropFirst().first == "=" else { continue }
            let value = line.dropFirst(2)
            switch line.first {
            case "v":
                sessionAddress = nil
                current = nil
            case "c":
                // c=IN IP4 192.0.2.1 (a TTL or count may follow a slash)
                let parts = value.split(separator: " ")
                guard parts.count >= 3, let host = parts[2].split(separator: "/").first, let addr = IPAddress(host) else { continue }
                if let current { media[current].address = addr } else { sessionAddress = addr }
            case "m":
                let parts = value.split(separator: " ")
                current = nil
                guard parts.count >= 3, let portText = parts[1].split(separator: "/").first, let port = UInt16(portText) else { continue }
                media.append(
                    SDPMedia(
                        media: String(parts[0]), address: sessionAddress, port: port, transport: String(parts[2]),
                        formats: parts.dropFirst(3).compactMap { UInt8($0) }, rtpmap: [:], rtcpPort: nil, rtcpMux: false))
                current = media.count - 1
            case "a":
                guard let current else { continue }
                if value.hasPrefix("rtpmap:") {
                    // a=rtpmap:96 opus/48000/2
                    let rest = value.dropFirst(7)
                    let parts = rest.split(separator: " ", maxSplits: 1)
                    guard parts.count == 2, let pt = UInt8(parts[0]) else { continue }
                    // "96 /" has no encoding name: split gives nothing, so there is no enc[0].
                    let enc = parts[1].split(separator: "/")
                    guard let first = enc.first else { continue }
                    let name = String(first)
                    var rate = enc.count > 1 ? UInt32(enc[1]) ?? 0 : 0
                    if rate == 0 { rate = StaticPayloadTypes.clockRate(encodingName: name) }
                    media[current].rtpmap[pt] = PayloadFormat(name: name, clockRate: rate)
                } else if value.hasPrefix("rtcp:") {
                    media[current].rtcpPort = UInt16(value.dropFirst(5).prefix(while: { $0.isNumber }))
                } else if value == "rtcp-mux" {
                    media[current].rtcpMux = true
                }
            default:
                break
            }
        }
        return media
    }
}

extension Substring {
    func trimmingSpaces() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
