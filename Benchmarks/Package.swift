// swift-tools-version:6.1
import PackageDescription

/// Micro-benchmarks of Hearth's JSON codec, engine and the stages of a write (ordo-one/benchmark). A separate package so
/// that the root package's `swift build` and `swift test` never build them:
/// `cd Benchmarks && swift package benchmark`.
let package = Package(
    name: "HearthBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Hearth", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HearthJSON", package: "Hearth"),
            ],
            path: "Benchmarks/CodecBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        .executableTarget(
            name: "EngineBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HearthCore", package: "Hearth"),
            ],
            path: "Benchmarks/EngineBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        .executableTarget(
            name: "WritePathBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HearthCore", package: "Hearth"),
                .product(name: "HearthProtocol", package: "Hearth"),
                .product(name: "HearthStorage", package: "Hearth"),
            ],
            path: "Benchmarks/WritePathBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
    ],
    swiftLanguageModes: [.v6]
)
