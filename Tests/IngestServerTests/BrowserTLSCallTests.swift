import Foundation
import TestSupport
import XCTest

/// The README's browser example as written: a page on an https origin (`https://app.example`)
/// loads `https://collector.example:PORT/agent.js` from `callstats serve --tls-cert --tls-key`
/// and posts a real call to it over TLS. Both names resolve to 127.0.0.1 inside Chromium only
/// (`--host-resolver-rules`), the certificates come from a CA the test makes, and Chromium is
/// told to trust the server's key (`--ignore-certificate-errors-spki-list`). The page itself is
/// served over https by `openssl s_server -WWW`. Then `callstats analyze` finds the call.
final class BrowserTLSCallTests: XCTestCase {
    static let callSeconds = 8

    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("serve-browser-tls") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// A port free on 127.0.0.1 at the moment of asking (for the page server, which cannot say
    /// which port it took).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = Glibc.bind(fd, $0, length)
                return getsockname(fd, $0, &length)
            }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    func testBrowserCallOverHTTPSFromAnHTTPSPage() throws {
        guard let chromium = BrowserCallTests.chromium else {
            throw XCTSkip("chromium is not installed (apt-get install chromium): the browser call over https is not checked")
        }
        let ca = try TestCA(directory: dir.appendingPathComponent("ca"))
        let server = try ca.issue("server", commonName: "collector.example")
        let spki = try ca.spkiHash(server.certificate)

        let pagePort = BrowserTLSCallTests.freePort()
        let pageOrigin = "https://app.example:\(pagePort)"
        let logs = dir.appendingPathComponent("logs")
        let serve = try ServeProcess(
            directory: logs,
            arguments: ["--tls-cert", server.certificate.path, "--tls-key", server.key.path, "--allow-origin", pageOrigin])
        let site = dir.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try BrowserCallTests.page(collector: "https://collector.example:\(serve.port)", seconds: BrowserTLSCallTests.callSeconds)
            .write(to: site.appendingPathComponent("call.html"), atomically: true, encoding: .utf8)

        let pageServer = Process()
        pageServer.executableURL = URL(fileURLWithPath: TestCA.openssl!)
        pageServer.arguments = [
            "s_server", "-accept", "127.0.0.1:\(pagePort)", "-cert", server.certificate.path, "-key", server.key.path, "-WWW",
            "-quiet",
        ]
        pageServer.currentDirectoryURL = site
        pageServer.standardInput = FileHandle.nullDevice
        pageServer.standardOutput = FileHandle.nullDevice
        pageServer.standardError = FileHandle.nullDevice
        try pageServer.run()
        defer { if pageServer.isRunning { pageServer.terminate(); pageServer.waitUntilExit() } }
        // Listening once a connection is taken (bounded: 10 s).
        let listening = Date().addingTimeInterval(10)
        while Date() < listening, (try? RawHTTP(port: pagePort)) == nil { usleep(100_000) }

        let browserLog = dir.appendingPathComponent("chromium.log")
        _ = FileManager.default.createFile(atPath: browserLog.path, contents: nil)
        let lines = try BrowserCallTests.runCall(
            chromium: chromium, page: pageOrigin + "/call.html", profile: dir.appendingPathComponent("profile"), logs: logs,
            seconds: BrowserTLSCallTests.callSeconds,
            arguments: [
                "--host-resolver-rules=MAP app.example 127.0.0.1, MAP collector.example 127.0.0.1",
                "--ignore-certificate-errors-spki-list=" + spki,
            ],
            browserLog: browserLog)
        serve.signal(SIGTERM)
        XCTAssertEqual(serve.wait(), 0)
        let chromiumSaid = (try? String(contentsOf: browserLog, encoding: .utf8)) ?? ""
        XCTAssertFalse(lines.contains { $0.contains("page-error") }, lines.filter { $0.contains("page-error") }.joined())
        XCTAssertEqual(
            lines.filter { $0.contains(#""kind":"end""#) }.count, 2,
            "both calls ended (\(lines.count) lines posted); chromium: \(chromiumSaid.suffix(3000))")
        XCTAssertGreaterThanOrEqual(lines.filter { $0.contains(#""kind":"stats""#) }.count, BrowserTLSCallTests.callSeconds)

        let db = dir.appendingPathComponent("calls.sqlite").path
        let analyzed = try Binary.run(["analyze", logs.path, "--db", db, "--quiet"])
        XCTAssertEqual(analyzed.status, 0, analyzed.err)
        let q = try Binary.run([
            "query", "--db", db, "--format", "csv",
            "SELECT call_id, platform, media, round(mos_cq, 2), end_reason FROM calls ORDER BY call_id",
        ])
        XCTAssertEqual(q.status, 0, q.err)
        print("browser-call-https\n" + q.out)
        let rows = q.out.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        XCTAssertEqual(rows.map { $0[0] }, ["browser-a", "browser-b"], q.out)
        for row in rows where row.count >= 5 {
            XCTAssertEqual(row[1], "web")
            XCTAssertEqual(row[2], "audio+video", "media of \(row[0])")
            XCTAssertGreaterThan(Double(row[3]) ?? 0, 4.0, "audio MOS of \(row[0])")
        }
    }
}
