import CallLog
/// Reassembles fragmented IPv4 and IPv6 datagrams, within fixed memory bounds.
///
/// SIP INVITEs with large SDP bodies are the usual fragmented UDP in a call capture; media
/// never is. So this is the cold path: fragments are copied, and a hostile or lossy capture
/// can hold at most `maximumDatagrams` partial datagrams of at most `maximumDatagramBytes`,
/// each dropped `timeoutNanos` after its first fragment.
package struct IPReassembler: Sendable {
    package struct Key: Hashable, Sendable {
        var source: IPAddress
        var destination: IPAddress
        var identification: UInt32
        var isIPv6: Bool

        package init(source: IPAddress, destination: IPAddress, identification: UInt32, isIPv6: Bool) {
            self.source = source
            self.destination = destination
            self.identification = identification
            self.isIPv6 = isIPv6
        }
    }

    struct Pending {
        var firstSeenNanos: Int64
        var pieces: [(offset: Int, bytes: [UInt8])] = []
        var totalLength: Int?
        var heldBytes = 0
        var sawUDPStart = false
    }

    package var maximumDatagrams: Int
    package var maximumDatagramBytes: Int
    package var timeoutNanos: Int64
    /// Datagrams given up on: timed out, too large, truncated by the snap length, or evicted.
    package private(set) var abandoned = 0
    package private(set) var completed = 0
    var pending: [Key: Pending] = [:]

    package init(maximumDatagrams: Int = 256, maximumDatagramBytes: Int = 65_535, timeoutNanos: Int64 = 30_000_000_000) {
        self.maximumDatagrams = maximumDatagrams
        self.maximumDatagramBytes = maximumDatagramBytes
        self.timeoutNanos = timeoutNanos
    }

    package var pendingCount: Int { pending.count }

    /// Stores one fragment. `firstHeader` is the IPv6 next header of the first fragment
    /// (nil for later fragments, which do not carry it); IPv4 callers pass UDP implicitly.
    package mutating func add(
        key: Key, offset: Int, more: Bool, bytes: UnsafeRawBufferPointer, complete: Bool,
        timestampNanos: Int64, firstHeader: UInt8? = 17
    ) -> DecodeOutcome {
        expire(now: timestampNanos)
        guard complete, offset + bytes.count <= maximumDatagramBytes else {
            pending.removeValue(forKey: key)
            abandoned += 1
            return .fragmentHeld
        }
        if pending[key] == nil {
            if pending.count >= maximumDatagrams, let oldest = pending.min(by: { $0.value.firstSeenNanos < $1.value.firstSeenNanos }) {
                pending.removeValue(forKey: oldest.key)
                abandoned += 1
            }
            pending[key] = Pending(firstSeenNanos: timestampNanos)
        }
        var entry = pending[key]!
        entry.pieces.append((offset, Array(bytes)))
        entry.heldBytes += bytes.count
        if offset == 0 { entry.sawUDPStart = firstHeader == 17 }
        if !more { entry.totalLength = offset + bytes.count }
        guard let total = entry.totalLength, entry.sawUDPStart, entry.heldBytes >= total else {
            pending[key] = entry
            return .fragmentHeld
        }
        // Check that the pieces cover 0..<total without a gap; overlaps keep the first copy.
        entry.pieces.sort { $0.offset < $1.offset }
        var out = [UInt8](repeating: 0, count: total)
        var covered = 0
        for piece in entry.pieces {
            guard piece.offset <= covered else { break }
            let end = min(piece.offset + piece.bytes.count, total)
            if end > covered {
                out.replaceSubrange(covered..<end, with: piece.bytes[(covered - piece.offset)..<(end - piece.offset)])
                covered = end
            }
        }
        guard covered == total else {
            pending[key] = entry
            return .fragmentHeld
        }
        pending.removeValue(forKey: key)
        completed += 1
        return .reassembled(source: key.source, destination: key.destination, isIPv6: key.isIPv6, bytes: out)
    }

    mutating func expire(now: Int64) {
        guard !pending.isEmpty else { return }
        let before = pending.count
        pending = pending.filter { now - $0.value.firstSeenNanos <= timeoutNanos }
        abandoned += before - pending.count
    }
}
