import Foundation
import TestSupport
import XCTest

/// The built `callstats` binary, beside the test bundle in the build folder.
enum Binary {
    static let callstats = TestPaths.callstatsBinary

    /// Runs `callstats` to completion; returns exit status, stdout and stderr.
    @discardableResult
    static func run(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
        let r = try runProcess(callstats, args)
        return (r.status, r.out, r.err)
    }

    /// Every line `callstats cat` prints for a folder.
    static func cat(_ dir: URL) throws -> [String] {
        try run(["cat", dir.path]).out.split(separator: "\n").map(String.init)
    }
}

/// A running `callstats serve` process on 127.0.0.1 (a free port chosen by the server).
final class ServeProcess: @unchecked Sendable {
    let process = Process()
    let port: Int
    let directory: URL
    private let output = Pipe()
    private let errors = Pipe()
    private var collected = Data()
    private var collectedErrors = Data()
    private let lock = NSLock()

    init(directory: URL, arguments: [String] = []) throws {
        self.directory = directory
        process.executableURL = Binary.callstats
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--out", directory.path] + arguments
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var line = ""
        let handle = output.fileHandleForReading
        let deadline = Date().addingTimeInterval(30)
        while !line.contains("\n") && Date() < deadline {
            let d = handle.availableData
            if d.isEmpty { break }
            line += String(decoding: d, as: UTF8.self)
        }
        guard let match = line.firstMatch(of: /127\.0\.0\.1:(\d+)/), let p = Int(match.1) else {
            process.terminate()
            let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw XCTSkip("callstats serve did not start: \(line) \(err)")
        }
        port = p
        let lock = self.lock
        output.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            lock.lock()
            self?.collected.append(d)
            lock.unlock()
        }
        // Standard error is read as it comes (a full pipe would block the server's writes).
        errors.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            lock.lock()
            self?.collectedErrors.append(d)
            lock.unlock()
        }
    }

    var stdout: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: collected, as: UTF8.self)
    }

    func signal(_ s: Int32) { kill(process.processIdentifier, s) }

    /// The server's peak resident size so far (`VmHWM`), while it runs.
    var residentPeakBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kb = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kb * 1024
    }

    /// Waits for the process to exit; returns its status.
    @discardableResult
    func wait(timeout: TimeInterval = 30) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        output.fileHandleForReading.readabilityHandler = nil
        return process.terminationStatus
    }

    /// What the server wrote on standard error so far.
    var stderr: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: collectedErrors, as: UTF8.self)
    }

    /// Polls `condition` every 50 ms for up to 5 s; whether it became true.
    func waitFor(_ condition: () -> Bool) -> Bool {
        for _ in 0..<100 {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }
}

/// A minimal HTTP/1.1 client over a blocking socket, so tests control every byte sent (bodies
/// cut short, slow senders, half-closed connections).
final class RawHTTP: Sendable {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
    }

    enum Failure: Error { case connect(Int32), closed }

    let fd: Int32

    /// `source`: the loopback address to connect from (any of 127.0.0.0/8 reaches a server
    /// on 127.0.0.1), so that one test can be several clients' addresses.
    init(port: Int, receiveTimeout: Int = 30, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source, !RawHTTP.bind(fd, to: source) {
            let e = errno
            close(fd)
            throw Failure.connect(e)
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else {
            let e = errno
            close(fd)
            throw Failure.connect(e)
        }
        var tv = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Binds `fd` to `address` (port chosen by the kernel) before it connects.
    static func bind(_ fd: Int32, to address: String) -> Bool {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(address)
        return withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    func send(_ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + off, bytes.count - off, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads one response (Content-Length framed).
    func receive() throws -> Response {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        func fill() throws {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            guard n > 0 else { throw Failure.closed }
            buffer += chunk[0..<n]
        }
        var headerEnd: Int?
        while headerEnd == nil {
            try fill()
            if let r = buffer.indices.dropLast(3).first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }) {
                headerEnd = r + 4
            }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let status = Int(statusLine.split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for l in lines where l.contains(":") {
            let parts = l.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count - headerEnd! < length { try fill() }
        let body = String(decoding: buffer[headerEnd!..<(headerEnd! + length)], as: UTF8.self)
        return Response(status: status, headers: headers, body: body)
    }

    /// One request on a new connection.
    static func request(
        port: Int, method: String = "POST", path: String = "/v1/records", headers: [String: String] = [:],
        body: [UInt8] = [], from source: String? = nil
    ) throws -> Response {
        let c = try RawHTTP(port: port, from: source)
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        for (k, v) in headers { text += "\(k): \(v)\r\n" }
        text += "\r\n"
        c.send(Array(text.utf8) + body)
        return try c.receive()
    }

    static func post(port: Int, _ body: String, headers: [String: String] = [:], from source: String? = nil) throws -> Response {
        try request(port: port, headers: headers, body: Array(body.utf8), from: source)
    }
}

/// Records as agents write them.
enum Records {
    static let baseTs: Int64 = 1_795_349_930_000

    static func call(_ id: String, ts: Int64 = baseTs) -> String {
        #"{"v":1,"kind":"call","call":"\#(id)","ts":\#(ts),"direction":"outgoing","platform":"web","media":["audio"]}"#
    }

    static func event(_ id: String, ts: Int64, type: String = "mute") -> String {
        #"{"v":1,"kind":"event","call":"\#(id)","ts":\#(ts),"action":"callState","type":"\#(type)"}"#
    }

    /// A full snapshot with a growing counter.
    static func stats(_ id: String, ts: Int64, seq: Int, pc: String = "a") -> String {
        #"{"v":1,"kind":"stats","call":"\#(id)","ts":\#(ts),"format":"w3c","pc":"\#(pc)","seq":\#(seq),"report":[{"id":"IT01","timestamp":\#(ts),"type":"inbound-rtp","kind":"audio","ssrc":1,"packetsReceived":\#(50 * seq),"packetsLost":0,"jitter":0.003}]}"#
    }
}
