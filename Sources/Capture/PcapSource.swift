import CPcap
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why libpcap could not open or read.
public struct PcapError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}

/// A stretch of a capture file that could not be read: a record cut by the end of the file,
/// a record header with an impossible length, a pcapng packet block naming an interface that
/// has no description block.
public struct PcapDamage: Equatable, Sendable, CustomStringConvertible {
    /// The 1-based number of the unreadable record, counting every record before it.
    public var record: Int
    /// Where that record starts in the file.
    public var byteOffset: Int
    /// libpcap's words.
    public var message: String
    /// True when reading went on after it (the format says where the next record starts).
    public var resumed: Bool

    public var description: String {
        "record \(record) at byte \(byteOffset): \(message); "
            + (resumed ? "skipped, reading went on" : "the rest of the file was not read")
    }
}

/// Kernel and libpcap counters of a live capture (`pcap_stats`).
public struct PcapStatistics: Equatable, Sendable {
    public var received: UInt32
    /// Dropped because the capture buffer was full: the reader was too slow.
    public var dropped: UInt32
    /// Dropped by the interface or driver, where the platform reports it.
    public var interfaceDropped: UInt32
}

/// Options for a live capture.
public struct LiveCaptureOptions: Sendable {
    /// Bytes kept per packet. RTP analysis needs only headers, but SIP needs whole messages.
    public var snapLength: Int32 = 65_535
    public var promiscuous = false
    /// Deliver packets as they arrive instead of filling the buffer first.
    public var immediateMode = true
    /// Kernel buffer size in bytes; nil keeps libpcap's default.
    public var bufferSize: Int32? = 8 << 20
    /// How long a read waits before returning with nothing, so callers can check for stop.
    public var readTimeoutMs: Int32 = 100
    /// A BPF filter expression, e.g. `udp`.
    public var filter: String? = "udp"

    public init() {}
}

/// A libpcap handle: a capture file (pcap or pcapng) or a live interface.
///
/// Not thread-safe, except `breakLoop()`, which another thread (or a signal handler's
/// dispatch) may call to make a blocked `run` return.
public final class PcapSource: @unchecked Sendable {
    let handle: OpaquePointer
    public let linkType: LinkType
    public let isLive: Bool

    /// For live captures: how long `run` waits for a packet before reporting a timeout.
    var readTimeoutMs: Int32 = 100

    init(handle: OpaquePointer, isLive: Bool) {
        self.handle = handle
        self.isLive = isLive
        self.linkType = LinkType(rawValue: pcap_datalink(handle))
    }

    deinit {
        pcap_close(handle)  // also closes the fmemopen stream
        memory?.deallocate()
    }

    /// libpcap's error text: the buffer up to its terminating NUL.
    private static func message(_ errbuf: [CChar]) -> String {
        String(decoding: errbuf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Opens a capture file, with timestamps at nanosecond precision whatever the file holds.
    public static func open(file path: String) throws(PcapError) -> PcapSource {
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let h = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errbuf) else {
            throw PcapError(message: "cannot open \(path): \(PcapSource.message(errbuf))")
        }
        return PcapSource(handle: h, isLive: false)
    }

    /// Reads a capture held in memory (benchmarks, tests).
    public static func open(bytes: [UInt8]) throws(PcapError) -> PcapSource {
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        let copy = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
        bytes.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        guard let file = fmemopen(copy, bytes.count, "rb") else {
            copy.deallocate()
            throw PcapError(message: "fmemopen failed")
        }
        guard let h = pcap_fopen_offline_with_tstamp_precision(file, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errbuf) else {
            fclose(file)
            copy.deallocate()
            throw PcapError(message: "cannot read capture: \(PcapSource.message(errbuf))")
        }
        let source = PcapSource(handle: h, isLive: false)
        source.memory = copy
        return source
    }

    var memory: UnsafeMutableRawPointer?

    /// Opens a network interface for live capture.
    public static func open(interface name: String, options: LiveCaptureOptions = LiveCaptureOptions()) throws(PcapError) -> PcapSource {
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let h = pcap_create(name, &errbuf) else {
            throw PcapError(message: "cannot open interface \(name): \(PcapSource.message(errbuf))")
        }
        pcap_set_snaplen(h, options.snapLength)
        pcap_set_promisc(h, options.promiscuous ? 1 : 0)
        pcap_set_timeout(h, options.readTimeoutMs)
        pcap_set_immediate_mode(h, options.immediateMode ? 1 : 0)
        if let size = options.bufferSize { pcap_set_buffer_size(h, size) }
        pcap_set_tstamp_precision(h, Int32(PCAP_TSTAMP_PRECISION_NANO))
        let status = pcap_activate(h)
        if status < 0 {
            let message = String(cString: pcap_geterr(h))
            pcap_close(h)
            throw PcapError(message: "cannot activate \(name): \(message)")
        }
        let source = PcapSource(handle: h, isLive: true)
        source.readTimeoutMs = options.readTimeoutMs
        if let filter = options.filter { try source.setFilter(filter) }
        return source
    }

    /// Compiles and installs a BPF filter expression.
    public func setFilter(_ expression: String) throws(PcapError) {
        var program = bpf_program()
        guard pcap_compile(handle, &program, expression, 1, PCAP_NETMASK_UNKNOWN) == 0 else {
            throw PcapError(message: "bad filter \"\(expression)\": \(String(cString: pcap_geterr(handle)))")
        }
        defer { pcap_freecode(&program) }
        guard pcap_setfilter(handle, &program) == 0 else {
            throw PcapError(message: "cannot set filter: \(String(cString: pcap_geterr(handle)))")
        }
    }

    /// Why `run` returned.
    public enum Stop: Equatable, Sendable {
        case endOfFile
        /// A live read timed out with nothing to deliver (only when `returnOnTimeout`).
        case timeout
        case frameLimit
        case stopped
        /// A file's record could not be read and the next one cannot be found: the frames
        /// before it were delivered, `damage` says where reading stopped.
        case damaged
    }

    /// Records of a file that could not be read, in file order.
    public private(set) var damage: [PcapDamage] = []
    /// Records read from a file so far, readable or not.
    public private(set) var recordsRead = 0
    /// The snapshot length the file (or its first interface) declares, or the live one.
    public var snapLength: Int { Int(pcap_snapshot(handle)) }

    /// A pcapng block that libpcap read whole but refused (an interface without a description
    /// block) leaves the file at the next block: reading may go on. After any other error the
    /// file position is inside a record (a pcap header whose length is impossible, a block cut
    /// short), and what follows would be read as garbage headers, so reading stops. The bound
    /// keeps a file made only of such blocks from filling `damage`.
    static func resumable(_ message: String, damaged: Int) -> Bool {
        message.contains("Interface Description Block") && damaged < 1_000
    }

    /// Delivers frames to `body` until end of file, `breakLoop()`, `maxFrames`, or (for live
    /// captures with `returnOnTimeout`) an empty read timeout. Frame bytes are valid only
    /// inside `body`.
    @discardableResult
    public func run(
        maxFrames: Int = .max, returnOnTimeout: Bool = false,
        _ body: (_ timestampNanos: Int64, _ frame: UnsafeRawBufferPointer, _ originalLength: Int) -> Void
    ) throws(PcapError) -> Stop {
        var delivered = 0
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        // In immediate mode Linux libpcap may ignore the read timeout, so wait with poll().
        let fd = isLive ? pcap_get_selectable_fd(handle) : -1
        // Live with timeouts: read the ring without blocking and wait in poll() only when it is
        // empty. (A poll() per packet cost more than the packet's analysis at 200k packets/s.)
        if fd >= 0 && returnOnTimeout {
            pcap_setnonblock(handle, 1, nil)
            defer { pcap_setnonblock(handle, 0, nil) }
            while delivered < maxFrames {
                let r = pcap_next_ex(handle, &header, &data)
                if r == 1, let h = header?.pointee, let data {
                    let nanos = Int64(h.ts.tv_sec) * 1_000_000_000 + Int64(h.ts.tv_usec)
                    body(nanos, UnsafeRawBufferPointer(start: data, count: Int(h.caplen)), Int(h.len))
                    delivered += 1
                } else if r == 0 {
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    if poll(&p, 1, readTimeoutMs) == 0 { return .timeout }
                } else if r == -2 {
                    return .stopped
                } else if r < 0 {
                    throw PcapError(message: String(cString: pcap_geterr(handle)))
                }
            }
            return .frameLimit
        }
        // A file stays stopped where its damage stopped it: the bytes after are not records.
        if damage.last?.resumed == false { return .damaged }
        let file = isLive ? nil : pcap_file(handle)
        // Where the next record starts, to say where damage is. A classic pcap's records lie one
        // after another (a 16-byte header, then the captured bytes), so their places are counted;
        // pcapng blocks are not, and are asked of stdio (libpcap reads with it), which costs a
        // call a record.
        // libpcap reports a classic file's version (2.x) and a pcapng section's (1.x).
        let counted = file != nil && pcap_major_version(handle) == 2
        var nextOffset = counted ? file.map { Int(ftell($0)) } ?? -1 : -1
        while delivered < maxFrames {
            let offset = counted ? nextOffset : file.map { Int(ftell($0)) } ?? -1
            let r = pcap_next_ex(handle, &header, &data)
            switch r {
            case 1:
                recordsRead += 1
                guard let h = header?.pointee, let data else { continue }
                if counted { nextOffset += 16 + Int(h.caplen) }
                let nanos = Int64(h.ts.tv_sec) * 1_000_000_000 + Int64(h.ts.tv_usec)
                body(nanos, UnsafeRawBufferPointer(start: data, count: Int(h.caplen)), Int(h.len))
                delivered += 1
            case 0:
                if returnOnTimeout { return .timeout }
            case -2:
                return isLive ? .stopped : .endOfFile
            default:
                let message = String(cString: pcap_geterr(handle))
                guard !isLive else { throw PcapError(message: message) }
                recordsRead += 1
                let resumed = PcapSource.resumable(message, damaged: damage.count)
                damage.append(PcapDamage(record: recordsRead, byteOffset: offset, message: message, resumed: resumed))
                if !resumed { return .damaged }
            }
        }
        return .frameLimit
    }

    /// Feeds every frame into a session; for live captures, also keeps its kernel drop count
    /// current. Returns why reading stopped.
    @discardableResult
    public func feed(_ session: inout CaptureSession, maxFrames: Int = .max, returnOnTimeout: Bool = false) throws(PcapError) -> Stop {
        let link = linkType
        var sinceStats = 0
        let stop = try run(maxFrames: maxFrames, returnOnTimeout: returnOnTimeout) { ts, frame, originalLength in
            if frame.count < originalLength && PacketDecoder.cutInHeaders(linkType: link, frame: frame) {
                session.counters.framesCutInHeaders += 1
            }
            session.process(frame: frame, linkType: link, timestampNanos: ts)
            sinceStats += 1
            if isLive && sinceStats >= 10_000 {
                sinceStats = 0
                if let s = statistics() { session.kernelDrops = s.dropped &+ s.interfaceDropped }
            }
        }
        if isLive, let s = statistics() { session.kernelDrops = s.dropped &+ s.interfaceDropped }
        return stop
    }

    /// `pcap_stats`: meaningful for live captures only.
    public func statistics() -> PcapStatistics? {
        guard isLive else { return nil }
        var s = pcap_stat()
        guard pcap_stats(handle, &s) == 0 else { return nil }
        return PcapStatistics(received: s.ps_recv, dropped: s.ps_drop, interfaceDropped: s.ps_ifdrop)
    }

    /// Makes a blocked `run` return `.stopped` as soon as possible.
    public func breakLoop() { pcap_breakloop(handle) }
}
