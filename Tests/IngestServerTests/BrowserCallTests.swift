import Foundation
import TestSupport
import XCTest

/// A real call in headless Chromium: two RTCPeerConnections in one page with fake audio and
/// video, each recorded by agent.js (loaded from `callstats serve`) and posted to it on
/// 127.0.0.1; then `callstats analyze` reads the served folder.
final class BrowserCallTests: XCTestCase {
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    static let callSeconds = 20

    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("serve-browser") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// The call page; `collector` is where agent.js is loaded from and posts to.
    static func page(collector: String, seconds: Int = callSeconds) -> String {
        """
        <!doctype html>
        <html><head><title>call</title>
        <script src="\(collector)/agent.js"></script>
        </head><body>
        <script>
        const sleep = ms => new Promise(r => setTimeout(r, ms));
        function say(text) { document.title = text; }
        (async () => {
          try {
            const stream = await navigator.mediaDevices.getUserMedia({audio: true, video: {width: 640, height: 360}});
            const a = new RTCPeerConnection(), b = new RTCPeerConnection();
            const options = {intervalMs: 1000, flushIntervalMs: 2000, app: "browser-test", appVersion: "1"};
            const ma = callstats.attach(a, Object.assign({callId: "browser-a", labels: {side: "caller"}}, options));
            const mb = callstats.attach(b, Object.assign({callId: "browser-b", labels: {side: "callee"}}, options));
            a.onicecandidate = e => { if (e.candidate) b.addIceCandidate(e.candidate); };
            b.onicecandidate = e => { if (e.candidate) a.addIceCandidate(e.candidate); };
            for (const t of stream.getTracks()) a.addTrack(t, stream);
            const offer = await a.createOffer();
            await a.setLocalDescription(offer);
            await b.setRemoteDescription(offer);
            for (const t of stream.getTracks()) b.addTrack(t.clone(), stream);
            const answer = await b.createAnswer();
            await b.setLocalDescription(answer);
            await a.setRemoteDescription(answer);
            say("connecting");
            await sleep(\(seconds * 1000));
            ma.event("callState", "hold");
            await Promise.all([ma.end("terminatedLocally"), mb.end("terminatedRemotely")]);
            a.close(); b.close();
            say("ended");
          } catch (e) {
            say("error " + e);
            fetch("\(collector)/v1/records", {method: "POST", body: JSON.stringify({v: 1, kind: "event", call: "page-error", ts: Date.now(), action: "error", type: String(e)})});
          }
        })();
        </script></body></html>
        """
    }

    /// Opens `page` in headless Chromium (fake camera and microphone) and waits until `ends` of
    /// its calls' `end` records (both, by default) reached `logs` (the page hangs up after
    /// `seconds`), or the page's error did, or a minute more passed; returns the logs' lines as
    /// `callstats cat` prints them.
    static func runCall(
        chromium: String, page: String, profile: URL, logs: URL, seconds: Int = callSeconds, arguments: [String] = [],
        browserLog: URL? = nil, ends: Int = 2
    ) throws -> [String] {
        let browser = Process()
        browser.executableURL = URL(fileURLWithPath: chromium)
        browser.arguments =
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile.path,
                "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
                "--autoplay-policy=no-user-gesture-required", "--no-first-run", "--mute-audio",
            ] + arguments + [page]
        browser.standardOutput = FileHandle.nullDevice
        browser.standardError = try browserLog.map { try FileHandle(forWritingTo: $0) } ?? FileHandle.nullDevice
        try browser.run()
        defer { if browser.isRunning { browser.terminate(); browser.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(Double(seconds) + 60)
        var lines: [String] = []
        while Date() < deadline {
            sleep(2)
            lines = try Binary.cat(logs)
            let ended = lines.filter { $0.contains(#""kind":"end""#) }.count
            if ended >= ends || lines.contains(where: { $0.contains("page-error") }) { break }
        }
        return lines
    }

    func testBrowserCallIsRecordedAndAnalysed() throws {
        guard let chromium = BrowserCallTests.chromium else {
            throw XCTSkip("chromium is not installed (apt-get install chromium): the browser call is not checked")
        }
        let logs = dir.appendingPathComponent("logs")
        let server = try ServeProcess(directory: logs, arguments: ["--allow-origin", "*"])
        let html = dir.appendingPathComponent("call.html")
        try BrowserCallTests.page(collector: "http://127.0.0.1:\(server.port)").write(to: html, atomically: true, encoding: .utf8)

        let lines = try Self.runCall(
            chromium: chromium, page: "file://" + html.path, profile: dir.appendingPathComponent("profile"), logs: logs)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        XCTAssertFalse(lines.contains { $0.contains("page-error") }, lines.filter { $0.contains("page-error") }.joined())
        XCTAssertEqual(lines.filter { $0.contains(#""kind":"end""#) }.count, 2, "both calls ended")
        let snapshots = lines.filter { $0.contains(#""kind":"stats""#) }.count
        XCTAssertGreaterThanOrEqual(snapshots, BrowserCallTests.callSeconds, "a snapshot a second from each connection")
        XCTAssertTrue(lines.contains { $0.contains(#""action":"setup","type":"createOffer""#) })
        XCTAssertTrue(lines.contains { $0.contains(#""action":"iceState","type":"iceConnected""#) })

        let db = dir.appendingPathComponent("calls.sqlite").path
        let analyzed = try Binary.run(["analyze", logs.path, "--db", db, "--quiet"])
        XCTAssertEqual(analyzed.status, 0, analyzed.err)
        let q = try Binary.run([
            "query", "--db", db, "--format", "csv",
            """
            SELECT call_id, direction, platform, media, media_ms IS NOT NULL, round(mos_cq, 2), round(loss_pct, 2),
                   round(rtt_ms), audio_codec, video_codec, end_reason, grade FROM calls ORDER BY call_id
            """,
        ])
        XCTAssertEqual(q.status, 0, q.err)
        let rows = q.out.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        print("browser-call\n" + q.out)
        XCTAssertEqual(rows.map { $0[0] }, ["browser-a", "browser-b"], q.out)
        for row in rows where row.count >= 12 {
            XCTAssertEqual(row[2], "web")
            XCTAssertEqual(row[3], "audio+video", "media of \(row[0])")
            XCTAssertEqual(row[4], "1", "ICE connected after the answer: \(row[0])")
            XCTAssertGreaterThan(Double(row[5]) ?? 0, 4.0, "audio MOS of \(row[0])")
            XCTAssertLessThan(Double(row[6]) ?? 100, 0.5, "loss of \(row[0])")
            XCTAssertLessThan(Double(row[7]) ?? 1000, 20, "RTT of \(row[0])")
        }
        XCTAssertEqual(rows.first?[1], "outgoing")
        XCTAssertEqual(rows.last?[1], "incoming")
    }
}
