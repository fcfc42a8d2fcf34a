// swift-tools-version:6.1
import PackageDescription

/// Hearth: a realtime JSON database server. One target per layer; a lower layer never imports a
/// higher one (see docs/architecture.md).
let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "hearthd", targets: ["hearthd"]),
        .executable(name: "hearth-bench", targets: ["hearth-bench"]),
        .executable(name: "hearth", targets: ["hearth"]),
        .library(name: "HearthJSON", targets: ["HearthJSON"]),
        .library(name: "HearthCore", targets: ["HearthCore"]),
        // The wire protocol and the log, as libraries for the micro-benchmarks (Benchmarks/).
        .library(name: "HearthProtocol", targets: ["HearthProtocol"]),
        .library(name: "HearthStorage", targets: ["HearthStorage"]),
        .library(name: "HearthServer", targets: ["HearthServer"]),
        .library(name: "HearthClient", targets: ["HearthClient"]),
        // Receivers of trigger webhooks: signature checks and handlers by path pattern (docs/functions.md).
        .library(name: "HearthFunctions", targets: ["HearthFunctions"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        // Security: TLS on both ends, and JWT signature checks (never hand-written).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/swift-extras/swift-extras-base64.git", from: "1.2.0"),
        // HMAC-SHA256 for trigger webhook signatures (the same range jwt-kit resolves).
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"6.0.0"),
        // Observability: each server's own metrics registry, rendered for Prometheus.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        .target(name: "HearthJSON"),
        // libm: Number and JSONValue round doubles.
        .target(name: "HearthCore", dependencies: ["HearthJSON"], linkerSettings: [.linkedLibrary("m")]),
        // The system zlib (zlib1g-dev), for snapshot compression and CRC-32.
        .systemLibrary(name: "CZlib"),
        .target(
            name: "HearthStorage",
            dependencies: [
                "HearthCore", "HearthJSON", "CZlib",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Identity: admin secrets and JWT verification (every signature check is jwt-kit's).
        .target(
            name: "HearthAuth",
            dependencies: [
                "HearthCore", "HearthJSON",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            ]),
        .target(
            name: "HearthProtocol",
            dependencies: [
                "HearthCore", "HearthJSON",
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        // Clustering's seam to etcd (docs/cluster.md): the `ClusterStore` protocol, the
        // etcd gateway client on NIOHTTP1, and the election that decides the leader.
        .target(
            name: "HearthCluster",
            dependencies: [
                "HearthJSON",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            ]),
        // The single writer: the turn, access-checked apply, group commit, subscriptions, write
        // ids, onDisconnect and replication. No sockets, no HTTP: transports hand it `Request`s.
        .target(
            name: "HearthEngine",
            dependencies: [
                // HearthCluster: the member types (`MemberInfo`, `MemberState`) the cluster seam speaks.
                "HearthCore", "HearthJSON", "HearthProtocol", "HearthStorage", "HearthCluster",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            ]),
        .target(
            name: "HearthServer",
            dependencies: [
                "HearthCore", "HearthJSON", "HearthProtocol", "HearthStorage", "HearthAuth", "HearthCluster",
                "HearthEngine",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // Each trigger's series in its database's registry.
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                // Triggers sign their deliveries with HMAC-SHA256 (swift-crypto, already resolved for jwt-kit).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The web console's HTML, CSS and JavaScript, compiled into the binary (no Foundation).
            resources: [.embedInCode("Console")]),
        .target(
            name: "HearthClient",
            dependencies: [
                "HearthCore", "HearthJSON", "HearthProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // A receiver of trigger webhooks: verifies `Hearth-Signature` and dispatches events to
        // handlers registered by path pattern, on its own NIO HTTP server (docs/functions.md).
        .target(
            name: "HearthFunctions",
            dependencies: [
                "HearthJSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The runnable receiver of docs/functions.md: counts new messages through HearthClient.
        .executableTarget(
            name: "hearth-functions-example",
            dependencies: [
                "HearthFunctions", "HearthClient",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "hearthd",
            dependencies: [
                "HearthServer", "HearthCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "hearth",
            dependencies: [
                // HearthCore: `hearth rules check` compiles rules offline with RuleSet.
                "HearthClient", "HearthStorage", "HearthJSON", "HearthAuth", "HearthCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "hearth-bench",
            dependencies: [
                "HearthCore", "HearthJSON", "HearthProtocol", "HearthStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        // What several test targets need and test targets cannot share otherwise: a throwaway CA,
        // and a real etcd for the cluster tests.
        .target(
            name: "HearthTestSupport", dependencies: ["HearthCluster", "HearthCore"], path: "Tests/HearthTestSupport"),
        .testTarget(name: "HearthJSONTests", dependencies: ["HearthJSON"]),
        .testTarget(
            name: "HearthStorageTests",
            dependencies: [
                "HearthStorage", "HearthCore", "HearthJSON", "CZlib",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "HearthCoreTests", dependencies: ["HearthCore", "HearthJSON"],
            exclude: ["Resources"]),
        // The engine driven directly: requests in, answers and events out, no sockets.
        .testTarget(
            name: "HearthEngineTests",
            dependencies: [
                "HearthEngine", "HearthCluster", "HearthCore", "HearthJSON", "HearthProtocol", "HearthStorage",
                "HearthTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "HearthServerTests",
            dependencies: [
                "HearthServer", "HearthEngine", "HearthCore", "HearthJSON", "HearthProtocol", "HearthStorage",
                "HearthAuth", "HearthCluster", "HearthTestSupport", "HearthFunctions",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The Firebase-protocol test client speaks WebSocket (Support/FirebaseWireClient.swift).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Data directories read by the tests from their source folder (not bundled).
            exclude: ["Fixtures"]),
        .testTarget(
            name: "HearthClientTests",
            dependencies: [
                "HearthClient", "HearthServer", "HearthCore", "HearthJSON", "HearthAuth", "HearthTestSupport",
                "HearthCluster",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // Starts a real etcd (/usr/bin/etcd) for its integration tests.
        .testTarget(
            name: "HearthClusterTests",
            dependencies: [
                "HearthCluster", "HearthJSON", "HearthTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Signatures, dispatch by pattern and kind, and real HTTP round trips over loopback.
        .testTarget(
            name: "HearthFunctionsTests",
            dependencies: [
                "HearthFunctions", "HearthJSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        // Runs the built `hearth` executable against an in-process server.
        .testTarget(
            name: "HearthCLITests",
            dependencies: [
                "HearthServer", "HearthJSON", "HearthTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
