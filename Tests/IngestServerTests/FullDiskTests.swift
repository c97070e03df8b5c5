import Foundation
import TestSupport
import XCTest

/// `serve` on a disk that fills up: a small tmpfs of its own (mounting needs root, as CI has).
final class FullDiskTests: XCTestCase {
    var mountPoint: URL!

    override func setUpWithError() throws {
        mountPoint = TestPaths.temporaryDirectory("serve-full")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mount = try runProcess(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=512k", "tmpfs", mountPoint.path])
        guard mount.status == 0 else {
            if ProcessInfo.processInfo.environment["CI"] != nil { XCTFail("cannot mount a tmpfs in CI: \(mount.err)") }
            throw XCTSkip("cannot mount a tmpfs (not root?): serve on a full disk not tested")
        }
    }

    override func tearDownWithError() throws {
        _ = try? runProcess(URL(fileURLWithPath: "/bin/umount"), [mountPoint.path])
        try? FileManager.default.removeItem(at: mountPoint)
    }

    /// Every group commit that fails on the full disk is answered 503 and leaves no empty log
    /// file behind (`analyze` would list each as a file read); once there is room again, the
    /// records are taken and the folder analyses with exactly them.
    func testAFullDiskLeavesNoEmptyFilesAndRecovers() throws {
        let logs = mountPoint.appendingPathComponent("logs")
        let server = try ServeProcess(directory: logs, arguments: ["--file-bytes", "4096"])
        let filler = mountPoint.appendingPathComponent("filler")
        // Fill the disk: write until the file system refuses.
        FileManager.default.createFile(atPath: filler.path, contents: nil)
        let handle = try FileHandle(forWritingTo: filler)
        let block = Data(repeating: 0x41, count: 4096)
        while (try? handle.write(contentsOf: block)) != nil {}
        try? handle.close()

        var refused = 0
        for i in 0..<20 {
            let r = try RawHTTP.post(port: server.port, Records.call("full-\(i)"))
            if r.status == 503 { refused += 1 }
        }
        XCTAssertGreaterThan(refused, 0, "a full disk is answered 503")
        let left = try FileManager.default.contentsOfDirectory(atPath: logs.path)
        let empty = left.filter { (try? FileManager.default.attributesOfItem(atPath: logs.appendingPathComponent($0).path)[.size] as? Int) == 0 }
        XCTAssertEqual(empty, [], "no empty file is left by a failed write")

        try FileManager.default.removeItem(at: filler)
        let r = try RawHTTP.post(port: server.port, Records.call("after") + "\n" + Records.event("after", ts: Records.baseTs + 5))
        XCTAssertEqual(r.status, 200)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        // The database elsewhere: the tmpfs is for the logs.
        let db = TestPaths.temporaryDirectory("serve-full-db")
        defer { try? FileManager.default.removeItem(at: db) }
        try FileManager.default.createDirectory(at: db, withIntermediateDirectories: true)
        let run = try Binary.run(["analyze", logs.path, "--db", db.appendingPathComponent("x.sqlite").path])
        XCTAssertEqual(run.status, 0, run.err)
        XCTAssertTrue(run.out.contains("calls analysed  \(20 - refused + 1)"), run.out)
    }
}
