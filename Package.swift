// swift-tools-version:6.0
import PackageDescription

// Layering (each line depends only on lines above it):
//   CZstd, CPcap, CSQLite, CZlib      system libraries
//   CByteCompare                      SSE2 byte comparisons for the scanner (a C header)
//   CallLog                           the log format: records, zstd frames, reader, writer
//   Simulator, Capture, Collector,    producers and consumers of the format, side by side
//                                     (Collector: the in-app library that samples calls and writes logs)
//   Quality, Analysis                 (Quality is pure maths; Analysis turns records into results)
//   Store                             SQLite schema and writer for analysis results
//   Report                            the HTML report, read from a Store database
//   Ingest                            the analyze job: log files -> calls -> database, incrementally
//   IngestServer                      `callstats serve`: an HTTP endpoint that writes posted records
//                                     to rotating logs (SwiftNIO), and the browser agent it serves
//   callstats                         the command line, wiring the above
let package = Package(
    name: "callstats",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "callstats", targets: ["callstats"]),
        .library(name: "CallLog", targets: ["CallLog"]),
        .library(name: "Collector", targets: ["Collector"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CPcap", pkgConfig: "libpcap", providers: [.apt(["libpcap-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        .target(name: "CByteCompare"),

        .target(name: "CallLog", dependencies: ["CZstd"]),
        .target(name: "Simulator", dependencies: ["CallLog"]),
        .target(name: "Capture", dependencies: ["CallLog", "CPcap"]),
        .target(name: "Collector", dependencies: ["CallLog"]),
        .target(name: "Quality"),
        .target(name: "Analysis", dependencies: ["CallLog", "Quality", "CByteCompare"]),
        .target(name: "Store", dependencies: ["Analysis", "CSQLite"]),
        .target(name: "Ingest", dependencies: ["CallLog", "Analysis", "Store"]),
        .target(name: "Report", dependencies: ["CallLog", "Store"]),
        .target(name: "IngestServer", dependencies: [
            "CallLog", "CZstd", "CZlib",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ], resources: [.embedInCode("Resources/agent.js")]),
        .executableTarget(name: "callstats", dependencies: [
            "CallLog", "Simulator", "Capture", "Collector", "Analysis", "Store", "Ingest", "Report", "IngestServer",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        .target(name: "TestSupport", dependencies: ["CallLog"], path: "Tests/TestSupport"),
        .testTarget(name: "CallLogTests", dependencies: ["CallLog", "TestSupport"]),
        .testTarget(name: "SimulatorTests", dependencies: ["Simulator", "TestSupport"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "TestSupport"]),
        .testTarget(name: "QualityTests", dependencies: ["Quality"]),
        .testTarget(name: "AnalysisTests", dependencies: ["Analysis", "Simulator", "TestSupport"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "CSQLite", "Analysis", "Simulator", "TestSupport"]),
        .testTarget(name: "IngestTests", dependencies: ["Ingest", "CallLog", "Store", "Analysis", "Simulator", "TestSupport"]),
        .testTarget(name: "CollectorTests", dependencies: ["Collector", "Analysis", "TestSupport"]),
        .testTarget(name: "ReportTests", dependencies: ["Report", "Store", "Ingest", "CallLog", "TestSupport"]),
        .testTarget(name: "IngestServerTests", dependencies: ["IngestServer", "callstats", "CallLog", "Analysis", "TestSupport"]),
        .testTarget(name: "CLITests", dependencies: ["callstats", "TestSupport"]),
        // Faults, bad input and load: real processes killed, a corpus of damaged input, hostile
        // values, concurrent runs, fuzz-found inputs replayed. `make soak` runs them longer.
        .testTarget(name: "FaultTests", dependencies: [
            "callstats", "Ingest", "CallLog", "Store", "Analysis", "Simulator", "Capture", "TestSupport",
        ]),
    ]
)
