import Foundation

/// Locations tests need: the repository, and `../shared` beside it (reference data that is
/// not ours to commit; tests that need it skip when it is absent).
public enum TestPaths {
    /// The repository root, found from this source file's location.
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static let shared: URL = repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared")

    /// The real Chromium call recording, when present.
    public static var chromiumRecording: URL? {
        let u = shared.appendingPathComponent("data/chromium-call-30ms-2pct.jsonl.zst")
        return FileManager.default.fileExists(atPath: u.path) ? u : nil
    }

    public static let sampleData: URL = repositoryRoot.appendingPathComponent("Data")

    /// The built `callstats` binary, which tests run as users do: beside the test bundle (SwiftPM
    /// builds both into one folder; the test targets that run it depend on the executable).
    public static let callstatsBinary: URL = {
        let bundle = Bundle(for: BundleMarker.self).bundleURL
        let candidates = [Bundle.main.bundleURL, bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent("callstats") }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }()

    private final class BundleMarker {}

    /// A fresh empty directory, removed when the process exits normally.
    public static func temporaryDirectory(_ name: String = "callstats-test") -> URL {
        let u = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: u, withIntermediateDirectories: true)
        return u
    }
}
