// swift-tools-version:6.1
import PackageDescription

let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// This manifest's folder: the preload library's linker script is named by an absolute path.
let packageDirectory = Context.packageDirectory

let package = Package(
    name: "ChaosKit",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "ChaosKit", targets: ["ChaosKit"]),
        .library(name: "ChaosPoints", targets: ["ChaosPoints"]),
        .library(name: "ChaosHooks", targets: ["ChaosHooks"]),
        .library(name: "ChaosTesting", targets: ["ChaosTesting"]),
        .library(name: "ChaosNetwork", targets: ["ChaosNetwork"]),
        // The control endpoint and web console (HTTP + SSE, on Hummingbird): its own product,
        // and its server only with the package trait `Console` (see `traits` below).
        .library(name: "ChaosConsole", targets: ["ChaosConsole"]),
        // The control protocol's wire types, the endpoint files and a small client: what
        // `chaos ctl` and a UI-test runner in another process use (no server inside).
        .library(name: "ChaosControl", targets: ["ChaosControl"]),
        // `chaos`: a small C launcher (so `chaos run` starts programs without a Swift
        // runtime in the way) that hands every other subcommand to `chaos-tool`.
        .executable(name: "chaos", targets: ["chaos"]),
        .executable(name: "chaos-tool", targets: ["chaos-tool"]),
        // Loaded into other programs by `chaos run` (LD_PRELOAD); Linux/glibc only.
        .library(name: "ChaosPreload", type: .dynamic, targets: ["CChaosPreload"]),
        // The example apps are executable targets, not products: `swift run Weather` works
        // here, and packages that depend on ChaosKit never see them.
    ],
    // Hummingbird's tree (NIO, swift-crypto, async-http-client …, some 20 packages) is
    // resolved only for a consumer that asks for the console: SwiftPM leaves out a dependency
    // whose every use is behind a trait that is off. `swift build --traits Console` here.
    traits: [
        .trait(
            name: "Console",
            description: "The control endpoint and web console of ChaosConsole, served by Hummingbird."
        )
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // Only ChaosConsole uses it, under the Console trait; swift-configuration is not needed.
        .package(
            url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: ["FullFoundation"]),
        // Hummingbird's own lifecycle dependency: the console stops its server gracefully.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "ChaosKit",
            dependencies: ["CChaosRules", "CChaosGrace", .product(name: "Logging", package: "swift-log")],
            path: "Sources/3-SwiftAPI/ChaosKit",
            swiftSettings: strictSwift
        ),
        // The built-in points (clock, strings, location, GPX): their own module, so that
        // apps that only declare their own points never link FoundationXML.
        .target(
            name: "ChaosPoints", dependencies: ["ChaosKit", .product(name: "Logging", package: "swift-log")],
            path: "Sources/3-SwiftAPI/ChaosPoints",
            swiftSettings: strictSwift
        ),
        // The rules both languages follow (seed derivation), in portable C every platform
        // builds: ChaosKit and the engine read them from here.
        .target(name: "CChaosRules", path: "Sources/1-Engine/CChaosRules"),
        // The one system fault engine (plain C): plans, decisions, paths, the fd table.
        .target(name: "CChaosFaults", dependencies: ["CChaosRules"], path: "Sources/1-Engine/CChaosFaults"),
        // The control endpoint of a `chaos run` program (plain C, over the engine): served by
        // the preload library inside the program, or by chaos run's seccomp supervisor.
        .target(name: "CChaosControl", dependencies: ["CChaosFaults"], path: "Sources/1-Engine/CChaosControl"),
        // The interceptors of both deliveries are one source, in a folder of their own that no
        // target owns (Sources/2-Deliveries/Interceptors: interceptors.inc and its parts),
        // compiled here under the libc names and in CChaosIntercept under prefixed ones.
        .target(
            name: "CChaosPreload", dependencies: ["CChaosFaults", "CChaosControl"],
            path: "Sources/2-Deliveries/CChaosPreload",
            exclude: ["process_tree.inc", "exports.map"],
            cSettings: [.headerSearchPath("../Interceptors")],
            linkerSettings: [
                .linkedLibrary("dl", .when(platforms: [.linux])),
                .unsafeFlags(
                    [
                        "-nostartfiles", "-no-toolchain-stdlib-rpath",
                        "-Xlinker",
                        "--version-script=\(packageDirectory)/Sources/2-Deliveries/CChaosPreload/exports.map",
                    ], .when(platforms: [.linux])),
            ]
        ),
        // The in-process delivery of the same engine: the preload's interceptors with prefixed
        // names, for ChaosHooks to rebind GOT and data slots to, and the `ask` answers.
        .target(
            name: "CChaosIntercept", dependencies: ["CChaosFaults"], path: "Sources/2-Deliveries/CChaosIntercept",
            cSettings: [.headerSearchPath("../Interceptors")],
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        .target(
            name: "ChaosTesting", dependencies: ["ChaosKit", "ChaosNetwork"], path: "Sources/3-SwiftAPI/ChaosTesting",
            swiftSettings: strictSwift),
        .target(
            name: "ChaosNetwork",
            dependencies: [
                "ChaosKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ],
            path: "Sources/3-SwiftAPI/ChaosNetwork",
            swiftSettings: strictSwift
        ),
        // The control protocol (wire types, endpoint files, client); no server, no NIO. Its
        // JSON values are ChaosKit's ProfileValue, the one JSON value type of the package.
        .target(
            name: "ChaosControl", dependencies: ["ChaosKit"], path: "Sources/3-SwiftAPI/ChaosControl",
            swiftSettings: strictSwift),
        .target(
            name: "ChaosConsole",
            dependencies: [
                "ChaosKit",
                "ChaosNetwork",
                "ChaosControl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Console"])),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Console"])),
            ],
            path: "Sources/3-SwiftAPI/ChaosConsole",
            resources: [.copy("Console")],
            swiftSettings: strictSwift
        ),
        // The launcher is plain C: without swiftrt.o, and with --as-needed (main.c), it does not
        // load the Swift runtime it never calls, which cost every `chaos run` ~1.5 ms. The
        // toolchain's RUNPATH stays: a --sanitize=thread build finds its runtime there.
        .executableTarget(
            name: "chaos",
            // The engine and the control endpoint: the seccomp delivery decides in the
            // launcher itself, and serves `chaos ctl` from there.
            dependencies: ["CChaosFaults", "CChaosControl"], path: "Sources/2-Deliveries/chaos",
            linkerSettings: [.unsafeFlags(["-nostartfiles"], .when(platforms: [.linux]))]
        ),
        .executableTarget(
            name: "chaos-tool",
            dependencies: [
                "ChaosKit",
                "ChaosPoints",
                "ChaosHooks",
                "ChaosNetwork",
                "ChaosControl",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/4-Tools/chaos-tool",
            swiftSettings: strictSwift
        ),
        // Helpers the test targets share (recorders, signals, error expectations).
        .target(
            name: "TestHelpers", dependencies: ["ChaosKit", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestHelpers", swiftSettings: strictSwift
        ),
        .testTarget(name: "ChaosKitTests", dependencies: ["ChaosKit", "TestHelpers"], swiftSettings: strictSwift),
        .testTarget(
            name: "ChaosPointsTests",
            dependencies: ["ChaosPoints", "ChaosKit", "TestHelpers"],
            resources: [.copy("Resources")],
            swiftSettings: strictSwift
        ),
        // Runs the built `chaos` tool; depending on it makes `swift test` build it.
        .testTarget(
            name: "ChaosToolTests", dependencies: ["chaos", "chaos-tool", "TestHelpers"], swiftSettings: strictSwift),
        // Real programs under the built libChaosPreload.so (found beside this bundle, as
        // `swift build --show-bin-path` names it), and the C engine through its API.
        .testTarget(
            name: "ChaosPreloadTests", dependencies: ["CChaosFaults", "CChaosIntercept", "CChaosELF", "TestHelpers"],
            swiftSettings: strictSwift),
        // The system-fault conformance suite (issue #13): one set of scenarios, each run in-process
        // (system points applied from a profile) and under `chaos run` (the built `chaos` and
        // libChaosPreload.so), expecting the same result from both. CSystemProbes holds the C
        // that makes each scenario's calls: linked into the tests, and compiled by `cc` with
        // its program/main.c into the program `chaos run` starts.
        .target(
            name: "CSystemProbes", path: "Tests/CSystemProbes", exclude: ["program"],
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]
        ),
        .testTarget(
            name: "SystemConformanceTests",
            dependencies: ["CSystemProbes", "ChaosHooks", "ChaosKit", "TestHelpers", "chaos", "chaos-tool"],
            swiftSettings: strictSwift
        ),
        .systemLibrary(
            name: "CFFI", path: "Sources/3-SwiftAPI/CFFI", pkgConfig: "libffi", providers: [.apt(["libffi-dev"])]),
        // Small C targets, one job each: ELF rebinding, and read-side sections and grace
        // periods.
        .target(
            name: "CChaosELF", path: "Sources/3-SwiftAPI/CChaosELF",
            linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .target(name: "CChaosGrace", path: "Sources/3-SwiftAPI/CChaosGrace"),
        .target(
            name: "ChaosHooks",
            dependencies: [
                "ChaosKit", "CFFI", "CChaosELF", "CChaosGrace", "CChaosFaults", "CChaosIntercept",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/3-SwiftAPI/ChaosHooks",
            swiftSettings: strictSwift
        ),
        .target(name: "CHookFixtures", path: "Tests/CHookFixtures"),
        // CI's leak check (.ci/leakcheck runs it under valgrind).
        .executableTarget(
            name: "chaos-leakcheck", dependencies: ["ChaosHooks", "ChaosKit"], path: "Sources/4-Tools/chaos-leakcheck",
            swiftSettings: strictSwift),
        .testTarget(
            name: "ChaosHooksTests",
            dependencies: ["ChaosHooks", "ChaosKit", "CHookFixtures", "CChaosGrace", "CChaosFaults", "TestHelpers"],
            swiftSettings: strictSwift
        ),
        // Runs one virtual-time scenario per process (VirtualTimeTests): virtual time is
        // process-wide, and must not stop the other suites' clocks and sleeps.
        .executableTarget(
            name: "virtual-time-probe", dependencies: ["ChaosHooks", "ChaosKit", "ChaosTesting", "CChaosFaults"],
            path: "Tests/VirtualTimeProbe", swiftSettings: strictSwift
        ),
        .testTarget(
            name: "ChaosTestingTests", dependencies: ["ChaosTesting", "ChaosKit", "ChaosNetwork", "TestHelpers"],
            exclude: ["Profiles"],  // read by path through `.chaos(profile:)`
            swiftSettings: strictSwift
        ),
        // Examples: Dixie's example apps as Linux programs, and their robustness tests.
        .target(
            name: "ExampleApps",
            dependencies: [
                "ChaosKit", "ChaosPoints", "ChaosNetwork", .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/ExampleApps", swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "HalleyCountdown",
            dependencies: ["ChaosKit", "ChaosPoints", "ExampleApps", .product(name: "Logging", package: "swift-log")],
            path: "Examples/HalleyCountdown", swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "LocationTracker",
            dependencies: ["ChaosKit", "ChaosPoints", "ExampleApps", .product(name: "Logging", package: "swift-log")],
            path: "Examples/LocationTracker", swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "Weather",
            dependencies: [
                "ChaosKit", "ChaosPoints", "ChaosNetwork", "ExampleApps",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/Weather", swiftSettings: strictSwift
        ),
        .testTarget(
            name: "ExampleTests",
            dependencies: ["ExampleApps", "ChaosKit", "ChaosPoints", "ChaosTesting", "ChaosNetwork"],
            swiftSettings: strictSwift
        ),
        // The control endpoint's example: starts the endpoint and calls a point in a loop,
        // printing what it sees (the console tests and the browser script run it).
        .executableTarget(
            name: "ConsoleDemo",
            dependencies: [
                "ChaosKit", "ChaosNetwork", "ChaosConsole", "ExampleApps",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Examples/ConsoleDemo", exclude: ["Profiles"], swiftSettings: strictSwift
        ),
        // Virtual time steered from the console: waits an hour at a time on VirtualTime.
        .executableTarget(
            name: "ConsoleClockDemo",
            dependencies: [
                "ChaosKit", "ChaosHooks", "ChaosConsole", "ExampleApps",
            ],
            path: "Examples/ConsoleClockDemo", swiftSettings: strictSwift
        ),
        .testTarget(
            name: "ChaosConsoleTests",
            dependencies: [
                "ChaosConsole", "ChaosControl", "ChaosKit", "ChaosNetwork", "TestHelpers", "ConsoleDemo", "chaos",
                "chaos-tool", "ConsoleClockDemo",
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "ChaosNetworkTests",
            dependencies: ["ChaosNetwork", "ChaosKit", "TestHelpers"],
            resources: [.copy("Resources")],
            swiftSettings: strictSwift
        ),
    ]
)
