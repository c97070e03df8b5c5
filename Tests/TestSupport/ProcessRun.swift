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
    p.waitUntilExit()
    return ProcessResult(status: p.terminationStatus, out: String(decoding: o, as: UTF8.self), err: String(decoding: e, as: UTF8.self))
}
