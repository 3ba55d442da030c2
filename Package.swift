// swift-tools-version:6.1
import PackageDescription

let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "ChaosKit",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "ChaosKit", targets: ["ChaosKit"]),
        .library(name: "ChaosHooks", targets: ["ChaosHooks"]),
        .executable(name: "chaos", targets: ["chaos"]),
        // Loaded into other programs by `chaos run` (LD_PRELOAD); Linux/glibc only.
        .library(name: "ChaosPreload", type: .dynamic, targets: ["CChaosPreload"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "ChaosKit",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        .target(name: "CChaosPreload", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .executableTarget(
            name: "chaos",
            dependencies: [
                "ChaosKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(name: "ChaosKitTests", dependencies: ["ChaosKit"], swiftSettings: strictSwift),
        .systemLibrary(name: "CFFI", pkgConfig: "libffi", providers: [.apt(["libffi-dev"])]),
        .target(
            name: "CChaosELF",
            dependencies: ["CFFI"],
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        .target(
            name: "ChaosHooks",
            dependencies: ["ChaosKit", "CFFI", "CChaosELF", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        .target(name: "CHookFixtures"),
        // CI's leak check (.ci/leakcheck runs it under valgrind).
        .executableTarget(name: "chaos-leakcheck", dependencies: ["ChaosHooks", "ChaosKit"], swiftSettings: strictSwift),
        .testTarget(
            name: "ChaosHooksTests",
            dependencies: ["ChaosHooks", "ChaosKit", "CHookFixtures"],
            swiftSettings: strictSwift
        ),
    ]
)
