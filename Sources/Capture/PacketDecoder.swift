import CallLog
/// A UDP datagram found in a captured frame.
///
/// `payload` points into the frame (or into reassembled fragments) and is valid only while
/// the caller's buffer is; decoders never copy it.
package struct UDPDatagram {
    package var flow: FlowKey
    package var payload: UnsafeRawBufferPointer
    /// The payload length the UDP header announces. Larger than `payload.count` when the
    /// capture's snap length cut the frame short.
    package var wireLength: Int
    package var isIPv6: Bool
}

/// What a frame turned out to be.
package enum DecodeOutcome {
    case udp(UDPDatagram)
    /// A fragment was stored; the datagram will come out when the last piece arrives.
    case fragmentHeld
    /// The last fragment completed a datagram. Its UDP header and payload are in `bytes`.
    case reassembled(source: IPAddress, destination: IPAddress, isIPv6: Bool, bytes: [UInt8])
    /// Not UDP over IP (ARP, TCP, ICMP…), or a link type this decoder does not handle.
    case notUDP
    /// Too short or inconsistent to decode.
    case malformed
}

/// Decodes link, VLAN, IP and UDP headers, reassembling IP fragments within fixed bounds.
///
/// Pure and allocation-free for unfragmented traffic: everything is read in place from the
/// frame's bytes. Only fragments are copied, into the bounded `IPReassembler`.
package struct PacketDecoder {
    package var reassembler: IPReassembler

    package init(reassembler: IPReassembler = IPReassembler()) {
        self.reassembler = reassembler
    }

    package mutating func decode(
        linkType: LinkType, frame: UnsafeRawBufferPointer, timestampNanos: Int64
    ) -> DecodeOutcome {
        guard let (etherType, offset) = PacketDecoder.networkLayer(linkType: linkType, frame: frame) else {
            return .notUDP
        }
        let ip = frame.slice(from: offset)
        switch etherType {
        case 0x0800: return decodeIPv4(ip, timestampNanos: timestampNanos)
        case 0x86DD: return decodeIPv6(ip, timestampNanos: timestampNanos)
        default: return .notUDP
        }
    }

    /// Whether a frame cut short by the snapshot length lacks part of the headers a measurement
    /// needs: link, IP, UDP and RTP's fixed 12 bytes. Such frames are counted, not guessed at.
    static func cutInHeaders(linkType: LinkType, frame: UnsafeRawBufferPointer) -> Bool {
        guard let (etherType, offset) = networkLayer(linkType: linkType, frame: frame) else { return true }
        return frame.count < offset + (etherType == 0x86DD ? 40 : 20) + 8 + 12
    }

    /// Finds the network-layer protocol (as an EtherType) and where its header starts.
    static func networkLayer(linkType: LinkType, frame: UnsafeRawBufferPointer) -> (UInt16, Int)? {
        switch linkType.rawValue {
        case 1:  // Ethernet II, possibly with 802.1Q / 802.1ad tags
            guard frame.count >= 14 else { return nil }
            return skipVLANs(frame, typeOffset: 12)
        case 113:  // SLL: 16 bytes, protocol in the last two
            guard frame.count >= 16 else { return nil }
            return skipVLANs(frame, typeOffset: 14)
        case 276:  // SLL2: 20 bytes, protocol first
            guard frame.count >= 20 else { return nil }
            return loopTags(frame, type: frame.u16(0), next: 20)
        case 0, 108:  // 4-byte address family
            guard frame.count >= 4 else { return nil }
            let family: UInt32
            if linkType.rawValue == 108 {
                family = frame.u32(0)
            } else {
                // Host byte order of the capturing machine: families are small numbers, so
                // whichever reading is small is the right one.
                let le = UInt32(littleEndian: frame.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
                family = le <= 0xFFFF ? le : frame.u32(0)
            }
            switch family {
            case 2: return (0x0800, 4)
            case 10, 24, 28, 30: return (0x86DD, 4)  // Linux, NetBSD/OpenBSD, FreeBSD, Darwin
            default: return nil
            }
        case 12, 14, 101, 228, 229:
            guard frame.count >= 1 else { return nil }
            switch frame.u8(0) >> 4 {
            case 4: return (0x0800, 0)
            case 6: return (0x86DD, 0)
            default: return nil
            }
        default:
            return nil
        }
    }

    /// Follows a chain of 802.1Q/802.1ad tags starting at the EtherType at `typeOffset`.
    @inline(__always)
    static func skipVLANs(_ frame: UnsafeRawBufferPointer, typeOffset: Int) -> (UInt16, Int)? {
        loopTags(frame, type: frame.u16(typeOffset), next: typeOffset + 2)
    }

    /// Each tag is a 2-byte TCI followed by the next EtherType.
    @inline(__always)
    static func loopTags(_ frame: UnsafeRawBufferPointer, type initialType: UInt16, next initialNext: Int) -> (UInt16, Int)? {
        var type = initialType
        var next = initialNext
        var depth = 0
        while type == 0x8100 || type == 0x88A8 || type == 0x9100 {
            depth += 1
            guard depth <= 4, frame.count >= next + 4 else { return nil }
            type = frame.u16(next + 2)
            next += 4
        }
        return (type, next)
    }

    mutating func decodeIPv4(_ ip: UnsafeRawBufferPointer, timestampNanos: Int64) -> DecodeOutcome {
        guard ip.count >= 20 else { return .malformed }
        let vihl = ip.u8(0)
        guard vihl >> 4 == 4 else { return .malformed }
        let headerLength = Int(vihl & 0x0F) * 4
        let totalLength = Int(ip.u16(2))
        guard headerLength >= 20, totalLength >= headerLength, ip.count >= headerLength else { return .malformed }
        guard ip.u8(9) == 17 else { return .notUDP }
        let source = IPAddress(ipv4: ip.u32(12))
        let destination = IPAddress(ipv4: ip.u32(16))
        // Ethernet pads short frames; the IP total length says where the datagram really ends.
        let body = ip.slice(from: headerLength, count: totalLength - headerLength)
        let flags = ip.u16(6)
        let moreFragments = flags & 0x2000 != 0
        let fragmentOffset = Int(flags & 0x1FFF) * 8
        if moreFragments || fragmentOffset != 0 {
            let key = IPReassembler.Key(
                source: source, destination: destination, identification: UInt32(ip.u16(4)), isIPv6: false)
            return reassembler.add(
                key: key, offset: fragmentOffset, more: moreFragments, bytes: body,
                complete: totalLength - headerLength == body.count, timestampNanos: timestampNanos)
        }
        return PacketDecoder.udp(body, source: source, destination: destination, isIPv6: false)
    }

    mutating func decodeIPv6(_ ip: UnsafeRawBufferPointer, timestampNanos: Int64) -> DecodeOutcome {
        guard ip.count >= 40, ip.u8(0) >> 4 == 6 else { return .malformed }
        let payloadLength = Int(ip.u16(4))
        let source = IPAddress(high: ip.u64(8), low: ip.u64(16))
        let destination = IPAddress(high: ip.u64(24), low: ip.u64(32))
        var next = ip.u8(6)
        var offset = 40
        let end = 40 + payloadLength
        var fragment: (offset: Int, more: Bool, id: UInt32)?
        // Extension headers: hop-by-hop, routing, fragment, destination options.
        for _ in 0..<8 {
            switch next {
            case 17:
                let body = ip.slice(from: offset, count: end - offset)
                if let f = fragment {
                    let key = IPReassembler.Key(source: source, destination: destination, identification: f.id, isIPv6: true)
                    return reassembler.add(
                        key: key, offset: f.offset, more: f.more, bytes: body,
                        complete: end - offset == body.count, timestampNanos: timestampNanos, firstHeader: 17)
                }
                return PacketDecoder.udp(body, source: source, destination: destination, isIPv6: true)
            case 0, 43, 60:
                guard ip.count >= offset + 8 else { return .malformed }
                next = ip.u8(offset)
                offset += (Int(ip.u8(offset + 1)) + 1) * 8
            case 44:
                guard ip.count >= offset + 8 else { return .malformed }
                next = ip.u8(offset)
                let field = ip.u16(offset + 2)
                fragment = (Int(field & 0xFFF8), field & 1 != 0, ip.u32(offset + 4))
                offset += 8
                if fragment!.offset != 0 {
                    // Later fragments carry no UDP header; the protocol comes from the first.
                    let key = IPReassembler.Key(
                        source: source, destination: destination, identification: fragment!.id, isIPv6: true)
                    let body = ip.slice(from: offset, count: end - offset)
                    return reassembler.add(
                        key: key, offset: fragment!.offset, more: fragment!.more, bytes: body,
                        complete: end - offset == body.count, timestampNanos: timestampNanos, firstHeader: nil)
                }
            default:
                return .notUDP
            }
        }
        return .malformed
    }

    /// Reads a UDP header and hands out the payload in place.
    @inline(__always)
    static func udp(_ body: UnsafeRawBufferPointer, source: IPAddress, destination: IPAddress, isIPv6: Bool) -> DecodeOutcome {
        guard body.count >= 8 else { return .malformed }
        let length = Int(body.u16(4))
        // Length 0 is legal for IPv6 jumbograms only; take what was captured.
        let wire = length >= 8 ? length - 8 : body.count - 8
        let payload = body.slice(from: 8, count: wire)
        return .udp(
            UDPDatagram(
                flow: FlowKey(
                    source: Endpoint(address: source, port: body.u16(0)),
                    destination: Endpoint(address: destination, port: body.u16(2))),
                payload: payload, wireLength: wire, isIPv6: isIPv6))
    }
}
