// swift-tools-version:6.0
import Foundation
import PackageDescription

// `callstats-bench`: the benchmarks and the fixed workloads of the instruction-count checks,
// kept out of the product. It depends on the package one folder up by path; SwiftPM names a
// path dependency after its folder, whatever the clone is called, hence the name read here.
let mainPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "callstats-benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .executableTarget(name: "callstats-bench", dependencies: [
            .product(name: "CallstatsModules", package: mainPackage),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // `callstats serve`'s writer workload, in a binary of its own: SwiftNIO, which it links,
        // would otherwise add its start-up to every workload of `callstats-bench`.
        .executableTarget(name: "callstats-bench-serve", dependencies: [
            .product(name: "CallLog", package: mainPackage),
            .product(name: "ServeBenchmarkSupport", package: mainPackage),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Run the built `callstats-bench`, so they need no module of their own.
        .testTarget(name: "BenchTests", dependencies: ["callstats-bench"]),
    ]
)
