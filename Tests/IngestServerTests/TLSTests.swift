import CallLog
import Foundation
import TestSupport
import XCTest

/// A certificate authority made for one test with `openssl`, and server certificates it signs
/// for 127.0.0.1, localhost and the two names the browser test maps to 127.0.0.1.
struct TestCA {
    static let openssl: String? = ["/usr/bin/openssl", "/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }

    let directory: URL
    var certificate: URL { directory.appendingPathComponent("ca.pem") }

    /// Runs openssl in `directory`; throws with its error output when it fails.
    @discardableResult
    func openssl(_ args: [String], input: URL? = nil) throws -> String {
        let stdin = try input.map { try FileHandle(forReadingFrom: $0) }
        let r = try runProcess(URL(fileURLWithPath: TestCA.openssl!), args, in: directory, standardInput: stdin)
        guard r.status == 0 else { throw XCTSkip("openssl \(args.joined(separator: " ")) failed: \(r.err)") }
        return r.out
    }

    init(directory: URL) throws {
        guard TestCA.openssl != nil else {
            throw XCTSkip("openssl is not installed (apt-get install openssl): the TLS tests are not run")
        }
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=callstats test CA",
        ])
    }

    /// A server certificate and key signed by this CA: `name.pem`, `name.key`.
    func issue(_ name: String, commonName: String) throws -> (certificate: URL, key: URL) {
        let ext = directory.appendingPathComponent("\(name).ext")
        try """
        subjectAltName=DNS:localhost,DNS:collector.example,DNS:app.example,IP:127.0.0.1
        basicConstraints=CA:FALSE
        keyUsage=digitalSignature
        extendedKeyUsage=serverAuth

        """.write(to: ext, atomically: true, encoding: .utf8)
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(commonName)",
        ])
        try openssl([
            "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", "\(name).pem", "-extfile", "\(name).ext",
        ])
        return (directory.appendingPathComponent("\(name).pem"), directory.appendingPathComponent("\(name).key"))
    }

    /// base64 of the SHA-256 of a certificate's public key (SubjectPublicKeyInfo, DER): what
    /// Chromium's `--ignore-certificate-errors-spki-list` takes.
    func spkiHash(_ certificate: URL) throws -> String {
        let der = directory.appendingPathComponent("spki.der")
        try openssl(["x509", "-in", certificate.path, "-pubkey", "-noout", "-out", "spki.pem"])
        try openssl(["pkey", "-pubin", "-in", "spki.pem", "-outform", "der", "-out", der.path])
        try openssl(["dgst", "-sha256", "-binary", "-out", "spki.sha256", der.path])
        return try Data(contentsOf: directory.appendingPathComponent("spki.sha256")).base64EncodedString()
    }

    /// One request over TLS, verified against this CA (`openssl s_client`): the subject of the
    /// certificate the server presented and everything the server answered.
    func request(port: Int, _ text: String, expectSuccess: Bool = true) throws -> (subject: String, reply: String) {
        let input = directory.appendingPathComponent("request.txt")
        try text.write(to: input, atomically: true, encoding: .utf8)
        let r = try runProcess(
            URL(fileURLWithPath: TestCA.openssl!),
            [
                "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-CAfile", certificate.path,
                "-verify_return_error", "-ign_eof",
            ], in: directory, standardInput: try FileHandle(forReadingFrom: input))
        if expectSuccess { XCTAssertEqual(r.status, 0, "s_client: \(r.err)") }
        let subject = r.out.split(separator: "\n").first { $0.hasPrefix("subject=") }.map(String.init) ?? ""
        let reply = r.out.range(of: "HTTP/1.1 ").map { String(r.out[$0.lowerBound...]) } ?? ""
        return (subject, reply)
    }
}

/// `serve --tls-cert --tls-key`: HTTPS with a certificate of a test CA, and the certificate
/// rotated on SIGHUP.
final class TLSTests: XCTestCase {
    var dir: URL!
    var logs: URL { dir.appendingPathComponent("logs") }
    override func setUp() { dir = TestPaths.temporaryDirectory("serve-tls") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static func post(_ body: String) -> String {
        "POST /v1/records HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    func testHTTPSPostAndTheCertificateRotatedOnHangup() throws {
        let ca = try TestCA(directory: dir.appendingPathComponent("ca"))
        let first = try ca.issue("first", commonName: "callstats test server one")
        let second = try ca.issue("second", commonName: "callstats test server two")
        let cert = dir.appendingPathComponent("server.pem"), key = dir.appendingPathComponent("server.key")
        try FileManager.default.copyItem(at: first.certificate, to: cert)
        try FileManager.default.copyItem(at: first.key, to: key)
        let server = try ServeProcess(directory: logs, arguments: ["--tls-cert", cert.path, "--tls-key", key.path])

        let before = try ca.request(port: server.port, TLSTests.post(Records.call("c-tls-1") + "\n"))
        XCTAssertTrue(before.subject.contains("callstats test server one"), before.subject)
        XCTAssertTrue(before.reply.hasPrefix("HTTP/1.1 200"), before.reply)
        XCTAssertTrue(before.reply.contains(#""written":1"#), before.reply)
        // Plain HTTP to the HTTPS port is no request.
        XCTAssertNotEqual((try? RawHTTP.post(port: server.port, Records.call("c-plain")))?.status, 200)

        // A half-finished rotation (new certificate, old key) keeps the previous certificate.
        try FileManager.default.removeItem(at: cert)
        try FileManager.default.copyItem(at: second.certificate, to: cert)
        server.signal(SIGHUP)
        XCTAssertTrue(waitFor { server.stdout.contains("certificate not reloaded") }, server.stdout)
        let during = try ca.request(port: server.port, TLSTests.post(Records.call("c-tls-2") + "\n"))
        XCTAssertTrue(during.subject.contains("callstats test server one"), during.subject)
        XCTAssertTrue(during.reply.hasPrefix("HTTP/1.1 200"), during.reply)

        try FileManager.default.removeItem(at: key)
        try FileManager.default.copyItem(at: second.key, to: key)
        server.signal(SIGHUP)
        XCTAssertTrue(waitFor { server.stdout.contains("reloaded the certificate") }, server.stdout)
        let after = try ca.request(port: server.port, TLSTests.post(Records.call("c-tls-3") + "\n"))
        XCTAssertTrue(after.subject.contains("callstats test server two"), after.subject)
        XCTAssertTrue(after.reply.hasPrefix("HTTP/1.1 200"), after.reply)

        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let lines = try Binary.cat(logs)
        for id in ["c-tls-1", "c-tls-2", "c-tls-3"] { XCTAssertTrue(lines.contains { $0.contains(id) }, "\(id) written") }
        XCTAssertFalse(lines.contains { $0.contains("c-plain") })
    }

    /// Over TLS a connection past the bound per address is closed at once (no handshake is spent
    /// on it); once the address's connection closes, it is served again.
    func testPastTheBoundPerAddressATLSConnectionIsClosed() throws {
        let ca = try TestCA(directory: dir.appendingPathComponent("ca"))
        let issued = try ca.issue("server", commonName: "callstats test server")
        let server = try ServeProcess(
            directory: logs,
            arguments: ["--tls-cert", issued.certificate.path, "--tls-key", issued.key.path, "--max-connections-per-address", "1"])
        var held: RawHTTP? = try RawHTTP(port: server.port)
        // The held connection is counted once the server has accepted it: its handshake starts.
        held?.send([0x16])
        usleep(200_000)
        let refused = try ca.request(port: server.port, TLSTests.post(Records.call("c-refused") + "\n"), expectSuccess: false)
        XCTAssertEqual(refused.reply, "", "no answer past the bound")
        XCTAssertEqual(refused.subject, "", "no handshake past the bound")
        held = nil
        var served = (subject: "", reply: "")
        for _ in 0..<50 where !served.reply.hasPrefix("HTTP/1.1 200") {
            usleep(50_000)
            served = try ca.request(port: server.port, TLSTests.post(Records.call("c-served") + "\n"), expectSuccess: false)
        }
        XCTAssertTrue(served.reply.hasPrefix("HTTP/1.1 200"), served.reply)
        // A TLS connection closed after its reply is counted out at once, not after a wait for
        // the client's close_notify: one connection at a time, the address is served each time.
        for i in 0..<3 {
            let next = try ca.request(port: server.port, TLSTests.post(Records.call("c-next-\(i)") + "\n"))
            XCTAssertTrue(next.reply.hasPrefix("HTTP/1.1 200"), "request \(i) after the first: \(next.reply)")
        }
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let lines = try Binary.cat(logs)
        XCTAssertTrue(lines.contains { $0.contains("c-served") })
        XCTAssertFalse(lines.contains { $0.contains("c-refused") })
    }

    /// A TLS handshake sent a byte at a time is inside the request deadline too: the connection
    /// is closed at `--request-timeout` from its opening, though the read timeout never passed.
    func testASlowHandshakeIsCutAtTheRequestDeadline() throws {
        let ca = try TestCA(directory: dir.appendingPathComponent("ca"))
        let issued = try ca.issue("server", commonName: "callstats test server")
        let server = try ServeProcess(
            directory: logs,
            arguments: ["--tls-cert", issued.certificate.path, "--tls-key", issued.key.path, "--request-timeout", "2"])
        let slow = try RawHTTP(port: server.port, receiveTimeout: 10)
        let opened = Date()
        let closed = Locked<Date?>(nil)
        let watcher = Thread {
            _ = try? slow.receive()
            closed.withLock { $0 = Date() }
        }
        watcher.start()
        // The start of a ClientHello: record header, then handshake bytes that never complete it.
        let hello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03] + Array(repeating: 0x41, count: 20)
        for byte in hello where closed.withLock({ $0 == nil }) && Date().timeIntervalSince(opened) < 8 {
            slow.send([byte])
            usleep(250_000)
        }
        while closed.withLock({ $0 == nil }) && Date().timeIntervalSince(opened) < 10 { usleep(50_000) }
        let lifetime = try XCTUnwrap(closed.withLock { $0 }, "closed").timeIntervalSince(opened)
        XCTAssertGreaterThanOrEqual(lifetime, 1.8)
        XCTAssertLessThan(lifetime, 3.5, "closed at the deadline")
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }

    func testAKeyThatIsNotTheCertificatesIsRefusedAtStart() throws {
        let ca = try TestCA(directory: dir.appendingPathComponent("ca"))
        let first = try ca.issue("first", commonName: "one")
        let second = try ca.issue("second", commonName: "two")
        let r = try Binary.run([
            "serve", "--listen", "127.0.0.1:0", "--out", logs.path, "--tls-cert", first.certificate.path, "--tls-key", second.key.path,
        ])
        XCTAssertEqual(r.status, 2, r.out + r.err)
        XCTAssertTrue(r.err.contains("cannot be used together"), r.err)
        let missing = try Binary.run([
            "serve", "--listen", "127.0.0.1:0", "--out", logs.path, "--tls-cert", dir.appendingPathComponent("none.pem").path,
            "--tls-key", second.key.path,
        ])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.err.contains("cannot read the certificate"), missing.err)
    }

    private func waitFor(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while !condition() && Date() < deadline { usleep(50_000) }
        return condition()
    }
}
