import Foundation

/// What a finished process said: its exit status, standard output and standard error.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var out: String
    public var err: String
}

/// Runs `executable` with `arguments` to completion, in `directory` when given, and returns what
/// it said. Both pipes are drained before waiting, so that a process writing more than a pipe
/// holds cannot block the test.
@discardableResult
public func runProcess(
    _ executable: URL, _ arguments: [String], in directory: URL? = nil,
    environment: [String: String]? = nil, standardInput: FileHandle? = nil
) throws -> ProcessResult {
    let p = Process()
    p.executableURL = executable
    p.arguments = arguments
    if let directory { p.currentDirectoryURL = directory }
    if let environment { p.environment = environment }
    if let standardInput { p.standardInput = standardInput }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let e = err.fileHandleForReading.readDataToEndOfFile()
    return ProcessResult(status: waitForExit(p), out: String(decoding: o, as: UTF8.self), err: String(decoding: e, as: UTF8.self))
}

/// Waits for `process` to end and returns its exit status (128 + the signal for one killed by a
/// signal). It reaps the child itself: Foundation's own wait was seen to miss the end of a child
/// (`runuser` around `pg_ctl start`), leaving it a zombie and the test waiting for ever. When
/// Foundation has reaped it first, its own status is used.
public func waitForExit(_ process: Process) -> Int32 {
    var status: Int32 = 0
    while true {
        let r = waitpid(process.processIdentifier, &status, 0)
        if r == process.processIdentifier { break }
        if r == -1 && errno == EINTR { continue }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
}
