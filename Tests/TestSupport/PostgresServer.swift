import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server for tests: `initdb` into a temporary folder, `pg_ctl start` on
/// a free port of 127.0.0.1 with its socket in that folder, stopped and removed by `stop()`.
/// One per test suite (class `setUp`/`tearDown`); each test makes its own database.
///
/// PostgreSQL refuses to run as root: as root the server runs as the `postgres` user (Debian's
/// package makes it) or else `nobody`, through `runuser`, and owns the folder.
public final class PostgresServer: @unchecked Sendable {
    public let folder: URL
    public let port: Int
    private let binaries: URL
    private let runAs: String?
    private var databases = 0

    /// Why no server can be started here, or nil when one can.
    public static var unavailableReason: String? {
        findBinaries() == nil ? "PostgreSQL's server (initdb, pg_ctl) is not installed: `make test-deps` installs it" : nil
    }

    /// The server's programs: on PATH, or Debian's /usr/lib/postgresql/<version>/bin.
    static func findBinaries() -> URL? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { URL(fileURLWithPath: String($0)) }
        let debian = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted().reversed()
            .map { URL(fileURLWithPath: "/usr/lib/postgresql/\($0)/bin") }
        return (path + debian).first { dir in
            ["initdb", "pg_ctl", "postgres"].allSatisfy { FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent($0).path) }
        }
    }

    /// Starts a server, or skips the calling test (fails it when the environment variable CI is
    /// set: there the server must be installed).
    public static func start() throws -> PostgresServer {
        guard let binaries = findBinaries() else {
            let reason = unavailableReason!
            if ProcessInfo.processInfo.environment["CI"] != nil { throw ServerError(message: reason) }
            print("skipped: the PostgreSQL tests (\(reason))")
            throw Skip(reason: reason)
        }
        return try PostgresServer(binaries: binaries)
    }

    /// A missing server outside CI: the caller turns it into `XCTSkip`.
    public struct Skip: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    public struct ServerError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    private init(binaries: URL) throws {
        self.binaries = binaries
        folder = TestPaths.temporaryDirectory("pg")
        runAs = getuid() == 0 ? (getpwnam("postgres") != nil ? "postgres" : "nobody") : nil
        if let runAs { _ = try runProcess(URL(fileURLWithPath: "/bin/chown"), ["-R", runAs, folder.path]) }
        port = PostgresServer.freePort()
        let data = folder.appendingPathComponent("data").path
        try run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        // fsync off: the tests' data need not survive a crash of the machine.
        try run(
            "pg_ctl",
            [
                "-D", data, "-l", folder.appendingPathComponent("log").path, "-w", "-t", "60", "-o",
                "-p \(port) -k \(folder.path) -h 127.0.0.1 -F -c max_connections=60", "start",
            ])
    }

    /// Runs one of the server's programs (as the server's user when the tests run as root).
    @discardableResult
    public func run(_ program: String, _ arguments: [String]) throws -> ProcessResult {
        let executable = binaries.appendingPathComponent(program)
        let r =
            if let runAs {
                try runProcess(URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", runAs, "--", executable.path] + arguments, in: folder)
            } else {
                try runProcess(executable, arguments, in: folder)
            }
        guard r.status == 0 else { throw ServerError(message: "\(program) \(arguments.joined(separator: " ")) failed: \(r.err)\(r.out)") }
        return r
    }

    /// The URL of database `name` on this server.
    public func url(_ name: String = "postgres") -> String { "postgresql://postgres@127.0.0.1:\(port)/\(name)" }

    /// A new empty database, and its URL.
    public func createDatabase(_ prefix: String = "t") throws -> String {
        databases += 1
        let name = "\(prefix)\(databases)_\(getpid())"
        try psql("CREATE DATABASE \(name)")
        return url(name)
    }

    /// Runs SQL with psql (on PATH or beside the server's programs).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        let beside = binaries.appendingPathComponent("psql")
        let executable = FileManager.default.isExecutableFile(atPath: beside.path) ? beside : URL(fileURLWithPath: "/usr/bin/psql")
        let r = try runProcess(executable, [url(database), "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql])
        guard r.status == 0 else { throw ServerError(message: "psql \(sql): \(r.err)") }
        return r.out
    }

    /// Stops the server at once (an immediate shutdown: what a crash or a power cut leaves) and
    /// starts it again; `stop()` with `removing: false` then `restart()` is a server going away.
    public func stop(removing: Bool = true) {
        _ = try? run("pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
        if removing { try? FileManager.default.removeItem(at: folder) }
    }

    public func restart() throws {
        try run(
            "pg_ctl",
            [
                "-D", folder.appendingPathComponent("data").path, "-l", folder.appendingPathComponent("log").path, "-w", "-t", "60",
                "-o", "-p \(port) -k \(folder.path) -h 127.0.0.1 -F -c max_connections=60", "start",
            ])
    }

    /// A port nothing listens on now: the kernel's choice for a socket bound to port 0.
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
