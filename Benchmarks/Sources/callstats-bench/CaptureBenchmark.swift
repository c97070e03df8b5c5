import Capture
#if canImport(Glibc)
import ConsoleOutput
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Throughput of the whole capture path (libpcap read, decode, classification, statistics,
/// records) on a synthetic G.711 capture, for `callstats-bench`.
enum CaptureBenchmark {
    /// A classic pcap file (Ethernet, IPv4, UDP) holding `packets` PCMU packets spread over
    /// `streams` streams, 20 ms apart per stream, with one packet in 1000 missing. Write it to
    /// a file to run `tshark -q -z rtp,streams` on the same data.
    static func syntheticCapture(packets: Int, streams: Int) -> [UInt8] {
        let streams = max(1, streams)
        let frameLength = 14 + 20 + 8 + 12 + 160
        var out = [UInt8]()
        out.reserveCapacity(24 + packets * (16 + frameLength))
        func le32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        func be16(_ v: UInt16) { withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) } }
        func be32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) } }
        le32(0xA1B2_C3D4); out += [2, 0, 4, 0]; le32(0); le32(0); le32(65_535); le32(1)
        let payload = [UInt8](repeating: 0xFF, count: 160)
        let start: Int64 = 1_700_000_000_000_000_000
        for i in 0..<packets {
            let s = i % streams
            let n = i / streams
            if n % 1000 == 999 { continue }  // a little loss, so that loss accounting runs
            let t = start + Int64(n) * 20_000_000 + Int64(s) * 1_000
            le32(UInt32(t / 1_000_000_000)); le32(UInt32(t % 1_000_000_000 / 1000))
            le32(UInt32(frameLength)); le32(UInt32(frameLength))
            out += [0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00]
            out += [0x45, 0]; be16(UInt16(20 + 8 + 172)); be16(UInt16(truncatingIfNeeded: i)); out += [0, 0, 64, 17, 0, 0]
            be32(0x0A00_0000 | UInt32(s / 250 + 1)); be32(0x0A01_0000 | UInt32(s / 250 + 1))
            be16(UInt16(10_000 + (s % 250) * 2)); be16(UInt16(20_000 + (s % 250) * 2)); be16(8 + 172); be16(0)
            out += [0x80, 0]; be16(UInt16(truncatingIfNeeded: n)); be32(UInt32(truncatingIfNeeded: n * 160)); be32(0x1000_0000 + UInt32(s))
            out += payload
        }
        return out
    }

    /// Runs a synthetic capture through libpcap and a `CaptureSession` and returns the
    /// packets processed and the wall-clock seconds spent (capture generation excluded).
    static func run(packets: Int = 2_000_000, streams: Int = 100) throws(PcapError) -> (packets: Int, seconds: Double) {
        try run(capture: syntheticCapture(packets: packets, streams: streams))
    }

    /// Times an existing capture held in memory.
    static func run(capture bytes: [UInt8]) throws(PcapError) -> (packets: Int, seconds: Double) {
        let source = try PcapSource.open(bytes: bytes)
        var records = 0
        var session = CaptureSession { _ in records += 1 }
        let begin = monotonicSeconds()
        try source.feed(&session)
        session.finish()
        let seconds = monotonicSeconds() - begin
        return (session.counters.frames, seconds)
    }

    static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
