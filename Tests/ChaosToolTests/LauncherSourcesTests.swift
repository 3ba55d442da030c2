import Foundation
import TestHelpers
import Testing

/// In a checkout, the `chaos` launcher builds `chaos-tool` and the preload library again when
/// one of their source folders is newer (Sources/2-Deliveries/chaos/development.c). Its lists of folders
/// are C, written by hand; these tests hold them to what Package.swift says each product is
/// built from, so that a target added, renamed or moved cannot leave a stale product in use.
@Suite struct LauncherSourcesTests {
    static let root = ChaosToolTests.root

    /// One target of the manifest: its folder, the folders it reads headers from
    /// (`headerSearchPath`), and the targets of this package it depends on.
    struct Target {
        let folder: String
        let headerFolders: [String]
        let dependencies: [String]
    }

    /// The manifest's targets, read by SwiftPM itself (`dump-package`, in a scratch folder of
    /// its own, so that it never waits for the build folder this test runs from).
    static func manifestTargets() throws -> [String: Target] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("launcher-sources-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "--scratch-path", scratch.path, "dump-package"]
        process.currentDirectoryURL = root
        let ended = try runToEnd(process)
        try #require(ended.status == 0, "swift package dump-package failed: \(ended.stderr)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: ended.stdout) as? [String: Any])
        let targets = try #require(manifest["targets"] as? [[String: Any]])
        var byName: [String: Target] = [:]
        for target in targets {
            let name = try #require(target["name"] as? String)
            let type = target["type"] as? String
            let folder = (target["path"] as? String) ?? (type == "test" ? "Tests/\(name)" : "Sources/\(name)")
            // A dependency on a target of this package is `byName` or `target`; a `product`
            // comes from another package, which the launcher does not build.
            let dependencies = (target["dependencies"] as? [[String: Any]] ?? []).compactMap { dependency in
                ((dependency["byName"] ?? dependency["target"]) as? [Any])?.first as? String
            }
            let headerFolders = (target["settings"] as? [[String: Any]] ?? []).compactMap { setting -> String? in
                let kind = setting["kind"] as? [String: Any]
                guard let relative = (kind?["headerSearchPath"] as? [String: Any])?["_0"] as? String else { return nil }
                let path = root.appendingPathComponent(folder).appendingPathComponent(relative).standardized.path
                return String(path.dropFirst(root.standardized.path.count + 1))
            }
            byName[name] = Target(folder: folder, headerFolders: headerFolders, dependencies: dependencies)
        }
        return byName
    }

    /// The folders of `target` and of every target of this package it depends on, with the
    /// folders they read headers from.
    static func folders(of target: String, in targets: [String: Target]) -> Set<String> {
        var seen: Set<String> = []
        var folders: Set<String> = []
        var pending = [target]
        while let name = pending.popLast() {
            guard seen.insert(name).inserted, let found = targets[name] else { continue }
            folders.insert(found.folder)
            folders.formUnion(found.headerFolders)
            pending += found.dependencies
        }
        return folders
    }

    /// The strings of the C array `name` in Sources/2-Deliveries/chaos/main.c.
    static func launcherList(_ name: String) throws -> Set<String> {
        let source = try String(
            contentsOf: root.appendingPathComponent("Sources/2-Deliveries/chaos/main.c"), encoding: .utf8)
        let start = try #require(source.range(of: "\(name)[] = {"), "main.c has no list \(name)")
        let end = try #require(source.range(of: "};", range: start.upperBound..<source.endIndex))
        let body = source[start.upperBound..<end.lowerBound]
        return Set(
            body.split(separator: "\"", omittingEmptySubsequences: false).enumerated().compactMap { index, part in
                index % 2 == 1 ? String(part) : nil
            })
    }

    @Test func theToolsFoldersAreItsTargetsAndTheirDependencies() throws {
        let targets = try Self.manifestTargets()
        let expected = Self.folders(of: "chaos-tool", in: targets)
        #expect(expected.count > 5)
        #expect(try Self.launcherList("tool_sources") == expected)
    }

    @Test func thePreloadLibrarysFoldersAreItsTargetsAndTheirDependencies() throws {
        let targets = try Self.manifestTargets()
        let expected = Self.folders(of: "CChaosPreload", in: targets)
        #expect(expected.contains("Sources/1-Engine/CChaosFaults"))
        #expect(try Self.launcherList("preload_sources") == expected)
    }

    /// Every folder the launcher names exists: a list that named a moved folder would check
    /// nothing there and never rebuild.
    @Test func everyFolderTheLauncherNamesExists() throws {
        for folder in try Self.launcherList("tool_sources").union(Self.launcherList("preload_sources")) {
            var isDirectory: ObjCBool = false
            let path = Self.root.appendingPathComponent(folder).path
            #expect(
                FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue,
                "\(folder) is not a folder of the checkout")
        }
    }
}
