// swift-tools-version:6.0
import PackageDescription

// Layering (each line depends only on lines above it):
//   CZstd, CZlib, CPcap, CSQLite,     system libraries
//   CLibPQ                            libpq's API, loaded at run time (dlopen) for PostgreSQL URLs only
//   CByteCompare                      SSE2 byte comparisons for the scanner (a C header)
//   Quality                           pure maths: E-model, MOS, video scores, RFC 3550 (no dependencies)
//   CallLog                           the log format: records, zstd frames (gzip where zstd is
//                                     missing), reader, writer; what producers share: whole-stream
//                                     decompression, rotated logs' names, IP addresses, pseudonyms
//   Importers                         dumps users already have (webrtc-internals, rtcstats, the
//                                     project's Chromium test-page recording) -> log format v1
//   Simulator, Capture, Collector,    producers of the format, side by side (Collector: the in-app
//                                     library that samples calls and writes logs; Capture also uses
//                                     Quality's RFC 3550 maths)
//   MaterialScanning                  log lines -> per-call material: the JSON byte engine, the
//                                     stats field table and scanner, `RecordIngestor`, `CallMaterial`
//   MaterialCodec                     `CallMaterial` <-> stored bytes (its layouts and versions)
//   Analysis                          material -> results, pure: intervals, summaries, setup,
//                                     findings, grade, settings; `CallAnalysis` and its rows; a
//                                     conference's attribution (several calls' results -> causes)
//   SQLiteDatabase                    the SQLite C API made safe (connections, statements, values)
//   PostgresDatabase                  libpq made safe (connections, parameterised statements, COPY)
//   Store                             the schema and every SQL statement: writer, readers, comparison,
//                                     for SQLite files and PostgreSQL servers
//   Report                            the HTML report, read from a Store database
//   Jobs                              the analyze, regrade, prune and forget jobs: log files -> calls
//                                     -> database, incrementally
//   IngestServer                      `callstats serve`: an HTTP endpoint that writes posted records
//                                     to rotating logs (SwiftNIO; swift-metrics into swift-prometheus
//                                     for /metrics, swift-log for diagnostics), and the browser agent
//                                     it serves
//   ConsoleOutput                     terminal lines, tables and exit codes for the command-line tools
//   callstats                         the command line, wiring the above
//   BenchmarkSupport,                 entry points into the above for Benchmarks/ (package-access
//   ServeBenchmarkSupport             writer paths, copies of stored rows); the product never uses them
// Benchmarks/ is a package of its own (`callstats-bench`, `callstats-bench-serve`), built on the
// `CallstatsModules` and `ServeBenchmarkSupport` products.
let package = Package(
    name: "callstats",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "callstats", targets: ["callstats"]),
        .library(name: "CallLog", targets: ["CallLog"]),
        .library(name: "Collector", targets: ["Collector"]),
        // Every module, for the benchmarks package beside this one (Benchmarks/): it measures
        // them through their public API, and the product's internal paths through
        // BenchmarkSupport's entry points.
        .library(
            name: "CallstatsModules",
            targets: [
                "CallLog", "Importers", "Simulator", "Capture", "Collector", "Quality", "MaterialScanning", "MaterialCodec", "Analysis",
                "SQLiteDatabase", "PostgresDatabase", "Store", "Jobs", "Report", "ConsoleOutput", "BenchmarkSupport",
            ]),
        // Serve's writer path for the benchmarks package, apart: SwiftNIO linked into the
        // benchmark binary would add its start-up (relocations, protocol conformance scans) to
        // every other workload's count.
        .library(name: "ServeBenchmarkSupport", targets: ["ServeBenchmarkSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CPcap", pkgConfig: "libpcap", providers: [.apt(["libpcap-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // Not linked: PostgresDatabase opens libpq (libpq5) on its first connection, so that no
        // other command pays for mapping it and the libraries it brings. No libpq-dev to build;
        // libdl for dlopen on glibc before 2.34 (later ones have it in libc).
        .target(name: "CLibPQ", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .target(name: "CByteCompare"),

        // zstd where the platform has the library; iOS and the other Apple platforms ship only
        // zlib, and the collector writes gzip logs there (`LogCompression`).
        .target(name: "CallLog", dependencies: [.target(name: "CZstd", condition: .when(platforms: [.linux, .macOS])), "CZlib"]),
        .target(name: "Importers", dependencies: ["CallLog"]),
        .target(name: "Simulator", dependencies: ["CallLog"]),
        .target(name: "Capture", dependencies: ["CallLog", "Quality", "CPcap"]),
        .target(name: "Collector", dependencies: ["CallLog"]),
        .target(name: "Quality"),
        .target(name: "MaterialScanning", dependencies: ["CallLog", "CByteCompare"]),
        .target(name: "MaterialCodec", dependencies: ["CallLog", "MaterialScanning"]),
        .target(name: "Analysis", dependencies: ["CallLog", "Quality", "MaterialScanning"]),
        .target(name: "SQLiteDatabase", dependencies: ["CSQLite"]),
        .target(name: "PostgresDatabase", dependencies: ["CLibPQ"]),
        .target(name: "Store", dependencies: ["CallLog", "MaterialScanning", "MaterialCodec", "Analysis", "SQLiteDatabase", "PostgresDatabase"]),
        .target(name: "Jobs", dependencies: ["CallLog", "MaterialScanning", "MaterialCodec", "Analysis", "Store"]),
        .target(name: "Report", dependencies: ["Analysis", "CallLog", "SQLiteDatabase", "Store"]),
        .target(
            name: "IngestServer",
            dependencies: [
                "CallLog",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ], resources: [.embedInCode("Resources/agent.js")]),
        .target(name: "ConsoleOutput"),
        // The product code's entry points for the benchmarks package (its writer paths, copies
        // of stored rows): nothing the product uses.
        .target(name: "BenchmarkSupport", dependencies: ["CallLog", "Collector", "SQLiteDatabase", "Store"]),
        .target(name: "ServeBenchmarkSupport", dependencies: ["CallLog", "IngestServer", .product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "callstats",
            dependencies: [
                "ConsoleOutput", "CallLog", "Importers", "Simulator", "Capture", "Collector", "MaterialScanning", "MaterialCodec",
                "Analysis", "SQLiteDatabase", "Store", "Jobs", "Report", "IngestServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        .target(name: "TestSupport", dependencies: ["CallLog", "Simulator"], path: "Tests/TestSupport"),
        // Hand-built W3C reports and log files read into call material, for the tests of the
        // modules that consume material.
        .target(name: "MaterialTestSupport", dependencies: ["CallLog", "MaterialScanning"], path: "Tests/MaterialTestSupport"),
        .testTarget(name: "CallLogTests", dependencies: ["CallLog", "TestSupport"]),
        .testTarget(name: "SimulatorTests", dependencies: ["Simulator", "TestSupport"]),
        // Fixtures/: third-party dumps the tests read from the source tree (`#filePath`).
        .testTarget(
            name: "ImportersTests", dependencies: ["Importers", "CallLog", "MaterialScanning", "MaterialTestSupport", "Analysis", "TestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "TestSupport"]),
        .testTarget(name: "QualityTests", dependencies: ["Quality", "TestSupport"]),
        .testTarget(name: "MaterialScanningTests", dependencies: ["MaterialScanning", "Simulator", "TestSupport"]),
        .testTarget(
            name: "MaterialCodecTests",
            dependencies: [
                "MaterialCodec", "MaterialScanning", "Analysis", "MaterialTestSupport", "Simulator",
            ]),
        .testTarget(
            name: "AnalysisTests",
            dependencies: [
                "Analysis", "MaterialScanning", "MaterialTestSupport", "Simulator", "Importers", "Capture", "TestSupport", "Quality",
            ]),
        .testTarget(
            name: "StoreTests",
            dependencies: [
                "Store", "SQLiteDatabase", "CSQLite", "Analysis", "MaterialScanning", "Simulator", "TestSupport",
            ]),
        .testTarget(
            name: "JobsTests",
            dependencies: [
                "Jobs", "CallLog", "SQLiteDatabase", "Store", "Analysis", "MaterialScanning", "MaterialCodec", "Simulator",
                "Importers", "TestSupport", "MaterialTestSupport",
            ]),
        .testTarget(name: "CollectorTests", dependencies: ["Collector", "MaterialScanning", "Analysis", "TestSupport"]),
        .testTarget(
            name: "ReportTests", dependencies: ["Report", "SQLiteDatabase", "Store", "Jobs", "CallLog", "Importers", "Simulator", "TestSupport"]),
        .testTarget(
            name: "IngestServerTests",
            dependencies: [
                "IngestServer", "callstats", "CallLog", "MaterialScanning", "Analysis", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "CLITests", dependencies: ["callstats", "TestSupport"]),
        // The PostgreSQL store against a real server (`PostgresServer`), through the binary.
        .testTarget(name: "PostgresTests", dependencies: ["callstats", "Store", "SQLiteDatabase", "CallLog", "Importers", "TestSupport"]),
        // Faults, bad input and load: real processes killed, a corpus of damaged input, hostile
        // values, concurrent runs, fuzz-found inputs replayed. `make soak` runs them longer.
        .testTarget(
            name: "FaultTests",
            dependencies: [
                "callstats", "Jobs", "CallLog", "SQLiteDatabase", "Store", "MaterialScanning", "MaterialCodec", "Analysis",
                "Simulator", "Capture", "TestSupport",
            ]),
    ]
)
