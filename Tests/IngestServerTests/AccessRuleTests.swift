import Foundation
import TestSupport
import XCTest

/// Who may write through `callstats serve`: browser origins, bearer tokens as the file holds
/// them after each SIGHUP, and which paths need a token. The real binary on 127.0.0.1; what
/// reached the log is read back with `callstats cat`.
final class AccessRuleTests: XCTestCase {
    var dir: URL!
    var logs: URL { dir.appendingPathComponent("logs") }
    var tokens: URL { dir.appendingPathComponent("tokens") }

    override func setUp() {
        dir = TestPaths.temporaryDirectory("serve-access")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Writes the tokens file with `mode`.
    func writeTokens(_ text: String, mode: Int = 0o600) throws {
        try text.write(to: tokens, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: tokens.path)
    }

    /// A simple request as a page sends it without a preflight: `text/plain`, no custom header.
    func simplePost(_ server: ServeProcess, call: String, origin: String?, token: String? = nil) throws -> RawHTTP.Response {
        var headers = ["Content-Type": "text/plain;charset=UTF-8"]
        if let origin { headers["Origin"] = origin }
        if let token { headers["Authorization"] = "Bearer " + token }
        return try RawHTTP.post(port: server.port, Records.call(call) + "\n", headers: headers)
    }

    func testPostsFromOriginsNotAllowedAreRefusedAndNothingIsWritten() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--allow-origin", "https://app.example"])
        let evil = try simplePost(server, call: "c-evil", origin: "https://evil.example")
        XCTAssertEqual(evil.status, 403, evil.body)
        XCTAssertNil(evil.headers["access-control-allow-origin"])
        XCTAssertTrue((evil.json?["error"] as? String ?? "").contains("https://evil.example"), evil.body)
        // Sandboxed frames and local files of any site send `Origin: null`.
        XCTAssertEqual(try simplePost(server, call: "c-null", origin: "null").status, 403)
        // An origin that only starts like the allowed one is another origin.
        XCTAssertEqual(try simplePost(server, call: "c-suffix", origin: "https://app.example.evil").status, 403)

        let allowed = try simplePost(server, call: "c-allowed", origin: "https://app.example")
        XCTAssertEqual(allowed.status, 200, allowed.body)
        XCTAssertEqual(allowed.headers["access-control-allow-origin"], "https://app.example")
        XCTAssertEqual(try simplePost(server, call: "c-agent", origin: nil).status, 200, "a request without Origin is not a browser's")

        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let lines = try Binary.cat(logs)
        XCTAssertEqual(lines.count, 2, "only the allowed origin's and the agent's records: \(lines)")
        XCTAssertTrue(lines.contains { $0.contains("c-allowed") } && lines.contains { $0.contains("c-agent") }, "\(lines)")
        XCTAssertFalse(lines.contains { $0.contains("c-evil") || $0.contains("c-null") || $0.contains("c-suffix") }, "\(lines)")
    }

    func testWithoutAllowedOriginsEveryBrowserPostIsRefused() throws {
        let server = try ServeProcess(directory: logs)
        XCTAssertEqual(try simplePost(server, call: "c-page", origin: "http://127.0.0.1:9").status, 403)
        XCTAssertEqual(try simplePost(server, call: "c-agent", origin: nil).status, 200)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        XCTAssertEqual(try Binary.cat(logs).map { $0.contains("c-agent") }, [true])
    }

    func testOriginNullCannotBeAllowed() throws {
        // Bounded: a server that accepted the option would otherwise run until the suite ends.
        let r = try runProcess(
            URL(fileURLWithPath: "/usr/bin/timeout"),
            ["30", Binary.callstats.path, "serve", "--listen", "127.0.0.1:0", "--out", logs.path, "--allow-origin", "null"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.err.contains("--allow-origin null"), r.err)
    }

    func testAnEmptiedTokenFileRevokesEveryTokenOnHangup() throws {
        try writeTokens("secret-one\nsecret-two\n")
        let server = try ServeProcess(directory: logs, arguments: ["--tokens", tokens.path])
        XCTAssertEqual(try simplePost(server, call: "c-before", origin: nil, token: "secret-one").status, 200)

        try writeTokens("# every token withdrawn\n\n")
        server.signal(SIGHUP)
        XCTAssertTrue(server.waitFor { server.stderr.contains("every token is revoked") }, server.stderr)
        let after = try simplePost(server, call: "c-after", origin: nil, token: "secret-one")
        XCTAssertEqual(after.status, 401, after.body)
        XCTAssertEqual(try simplePost(server, call: "c-after-2", origin: nil, token: "secret-two").status, 401)

        // Tokens added back are taken again.
        try writeTokens("secret-three\n")
        server.signal(SIGHUP)
        XCTAssertTrue(server.waitFor { server.stdout.contains("reloaded 1 tokens") }, server.stdout)
        XCTAssertEqual(try simplePost(server, call: "c-third", origin: nil, token: "secret-three").status, 200)
        XCTAssertEqual(try simplePost(server, call: "c-one-again", origin: nil, token: "secret-one").status, 401)

        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        XCTAssertFalse(server.stderr.contains("secret-"), "tokens are never logged: \(server.stderr)")
        let lines = try Binary.cat(logs)
        XCTAssertEqual(lines.count, 2, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("c-before") } && lines.contains { $0.contains("c-third") }, "\(lines)")
    }

    func testATokenFileThatCannotBeReadKeepsThePreviousTokensAndSaysSo() throws {
        try writeTokens("secret-one\n")
        let server = try ServeProcess(directory: logs, arguments: ["--tokens", tokens.path])
        try FileManager.default.removeItem(at: tokens)
        server.signal(SIGHUP)
        XCTAssertTrue(server.waitFor { server.stderr.contains("tokens not reloaded, the previous 1 stay") }, server.stderr)
        XCTAssertEqual(try simplePost(server, call: "c-kept", origin: nil, token: "secret-one").status, 200)
        XCTAssertEqual(try simplePost(server, call: "c-wrong", origin: nil, token: "secret-two").status, 401)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        XCTAssertEqual(try Binary.cat(logs).map { $0.contains("c-kept") }, [true])
    }

    func testATokenFileReadableByOthersIsWarnedAboutAtStartAndReload() throws {
        try writeTokens("secret-one\n", mode: 0o644)
        let server = try ServeProcess(directory: logs, arguments: ["--tokens", tokens.path])
        XCTAssertTrue(server.waitFor { server.stderr.contains("is readable by every user (mode 644)") }, server.stderr)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: tokens.path)
        server.signal(SIGHUP)
        XCTAssertTrue(server.waitFor { server.stderr.contains("is readable by its group (mode 640)") }, server.stderr)
        XCTAssertTrue(server.waitFor { server.stdout.contains("reloaded 1 tokens") }, server.stdout)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)

        try writeTokens("secret-one\n", mode: 0o600)
        let quiet = try ServeProcess(directory: logs, arguments: ["--tokens", tokens.path])
        XCTAssertEqual(try RawHTTP.request(port: quiet.port, method: "GET", path: "/healthz").status, 200)
        quiet.signal(SIGHUP)
        XCTAssertTrue(quiet.waitFor { quiet.stdout.contains("reloaded 1 tokens") }, quiet.stdout)
        quiet.signal(SIGTERM)
        XCTAssertEqual(quiet.wait(), 0)
        XCTAssertFalse(quiet.stderr.contains("readable by"), "a file only its owner reads: \(quiet.stderr)")
    }

    func testWhichPathsNeedAToken() throws {
        try writeTokens("secret-one\n")
        let open = try ServeProcess(directory: logs, arguments: ["--tokens", tokens.path])
        for path in ["/metrics", "/healthz", "/agent.js"] {
            XCTAssertEqual(try RawHTTP.request(port: open.port, method: "GET", path: path).status, 200, path)
        }
        open.signal(SIGTERM)
        XCTAssertEqual(open.wait(), 0)

        let guarded = try ServeProcess(directory: logs, arguments: ["--tokens", tokens.path, "--metrics-token-required"])
        let none = try RawHTTP.request(port: guarded.port, method: "GET", path: "/metrics")
        XCTAssertEqual(none.status, 401, none.body)
        XCTAssertNotNil(none.headers["www-authenticate"])
        XCTAssertEqual(
            try RawHTTP.request(port: guarded.port, method: "GET", path: "/metrics", headers: ["Authorization": "Bearer wrong"]).status, 401)
        let metrics = try RawHTTP.request(port: guarded.port, method: "GET", path: "/metrics", headers: ["Authorization": "Bearer secret-one"])
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.body.contains("callstats_serve_requests_total"), metrics.body)
        for path in ["/healthz", "/agent.js"] {
            XCTAssertEqual(try RawHTTP.request(port: guarded.port, method: "GET", path: path).status, 200, path)
        }
        guarded.signal(SIGTERM)
        XCTAssertEqual(guarded.wait(), 0)

        let r = try Binary.run(["serve", "--listen", "127.0.0.1:0", "--out", logs.path, "--metrics-token-required"])
        XCTAssertEqual(r.status, 64, "a usage error: \(r.err)")
        XCTAssertTrue(r.err.contains("--metrics-token-required needs --tokens"), r.err)
    }
}
