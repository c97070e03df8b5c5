import Foundation
import TestSupport
import XCTest

/// The documents name files and folders a reader will look for: each must exist, so that a file
/// moved or renamed takes its mentions with it.
final class DocumentedFilesTests: XCTestCase {
    static let documents = [
        "README.md", "DECISIONS.md", "Dashboards/README.md", "Data/SCHEMA.md", "Data/FORMAT.md", "Data/FORMAT-capture.md", "Data/INGEST.md",
    ]

    /// The repository's files, relative to its root (build folders left out).
    static func repositoryFiles() -> [String] {
        let root = TestPaths.repositoryRoot
        var out: [String] = []
        let e = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = e?.nextObject() as? URL {
            let relative = String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1))
            if relative.hasPrefix(".") || relative.contains("/.build") || relative.hasPrefix("Benchmarks/.build") {
                e?.skipDescendants()
                continue
            }
            out.append(relative)
        }
        return out
    }

    func testEveryFileAndFolderTheDocumentsNameExists() throws {
        let files = Self.repositoryFiles()
        XCTAssertGreaterThan(files.count, 100)
        // A backticked file name (`Store/ResultTables.swift`, `check-performance.sh`) or a path
        // under one of the repository's top folders.
        let named = try NSRegularExpression(
            pattern:
                #"`((?:[A-Za-z0-9_.+-]+/)*[A-Za-z0-9_+-]+\.(?:swift|md|sh|py|json|yaml|txt|c|h)|(?:Sources|Tests|Benchmarks|Dashboards|Data|Fuzz)/[A-Za-z0-9_./+-]*)`"#
        )
        var checked = 0
        for document in Self.documents {
            let text = try String(contentsOf: TestPaths.repositoryRoot.appendingPathComponent(document), encoding: .utf8)
            for m in named.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let name = String(text[Range(m.range(at: 1), in: text)!]).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
                checked += 1
                let found = files.contains { $0 == name || $0.hasSuffix("/" + name) }
                XCTAssertTrue(found, "\(document) names \(name), which is not in the repository")
            }
        }
        XCTAssertGreaterThan(checked, 50, "the documents name files")
    }
}
