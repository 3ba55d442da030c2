// swift-tools-version:6.1
import PackageDescription

// A separate package so that the main package never builds benchmark-only dependencies.
let package = Package(
    name: "ChaosBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ChaosKit", path: "..", traits: ["Console"]),
        .package(url: "https://github.com/pointfreeco/swift-dependencies.git", exact: "1.17.1"),
    ],
    targets: [
        // The loopback HTTP server of the network tests (a link to the same file).
        .target(name: "LoopbackServer", swiftSettings: [.swiftLanguageMode(.v6)]),
        // The libffi floor of the hook benchmarks (Debian: libffi-dev).
        .target(name: "CRawFFIFloor", linkerSettings: [.linkedLibrary("ffi")]),
        .executableTarget(
            name: "chaos-bench",
            dependencies: [
                "LoopbackServer",
                "CRawFFIFloor",
                .product(name: "ChaosKit", package: "ChaosKit"),
                .product(name: "ChaosNetwork", package: "ChaosKit"),
                .product(name: "ChaosHooks", package: "ChaosKit"),
                .product(name: "ChaosConsole", package: "ChaosKit"),
                .product(name: "ChaosControl", package: "ChaosKit"),
                .product(name: "Dependencies", package: "swift-dependencies"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
