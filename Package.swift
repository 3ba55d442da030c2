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
        .library(name: "ChaosNetwork", targets: ["ChaosNetwork"]),
        .executable(name: "chaos", targets: ["chaos"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "ChaosKit",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        .target(
            name: "ChaosNetwork",
            dependencies: [
                "ChaosKit",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "chaos",
            dependencies: [
                "ChaosKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(name: "ChaosKitTests", dependencies: ["ChaosKit"], swiftSettings: strictSwift),
        .testTarget(
            name: "ChaosNetworkTests",
            dependencies: ["ChaosNetwork", "ChaosKit"],
            resources: [.copy("Resources")],
            swiftSettings: strictSwift
        ),
    ]
)
