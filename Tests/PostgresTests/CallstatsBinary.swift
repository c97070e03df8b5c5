import Foundation

/// The built `callstats` binary, which the PostgreSQL tests run as users do: beside the test
/// bundle (SwiftPM builds both into one folder).
let callstatsBinary: URL = {
    let bundle = Bundle(for: PostgresStoreTests.self).bundleURL
    let candidates = [Bundle.main.bundleURL, bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent("callstats") }
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
}()
