import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// The process-wide registry of live points: names come and go with the points.
@Suite struct RegistryTests {
    @Test func livePointsAreListed() {
        let sync = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let async = AsyncInjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let names = Chaos.pointNames
        #expect(names.contains(sync.name))
        #expect(names.contains(async.name))
        #expect(names == names.sorted())
    }

    @Test func deallocatedPointLeavesTheRegistry() {
        let name = uniqueName()
        do {
            let point = InjectionPoint<Void, Int, Never>(name) { 0 }
            #expect(Chaos.pointNames.contains(name))
            #expect(point() == 0)
        }
        #expect(Self.leavesTheRegistry(name))
        #expect(!Chaos.catalogue.contains { $0.name == name })
    }

    @Test func deallocatedAsyncPointLeavesTheRegistry() async {
        let name = uniqueName()
        var point: AsyncInjectionPoint<Void, Int, Never>? = AsyncInjectionPoint(name) { 0 }
        #expect(Chaos.pointNames.contains(name))
        #expect(await point?() == 0)
        point = nil
        #expect(Self.leavesTheRegistry(name))
    }

    /// Whether `name` leaves the registry within two seconds. Other suites listing the points
    /// hold strong references for the length of a listing, which delays a dropped point's
    /// deinit by that long, never for good.
    static func leavesTheRegistry(_ name: String) -> Bool {
        let deadline = ContinuousClock.now + .seconds(2)
        while Chaos.pointNames.contains(name) {
            if ContinuousClock.now > deadline { return false }
            usleep(1_000)
        }
        return true
    }

    @Test func nameBasedEntryForADeallocatedPointIsUnknown() {
        let name = uniqueName()
        do {
            _ = InjectionPoint<Void, Int, Never>(name) { 0 }
        }
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .constant(1)), .unknownPoint, mentioning: ["no live injection point"])
    }

    @Test func nameIsFreeAgainAfterADuplicateGoesAway() throws {
        let name = uniqueName()
        let survivor = InjectionPoint<Void, Int, Never>(name) { 1 }
        do {
            let duplicate = InjectionPoint<Void, Int, Never>(name) { 2 }
            expectChaosError(.duplicatePointName) {
                try Chaos(seed: 1).profile(ProfileEntry(point: name, .constant(3))).apply()
            }
            withExtendedLifetime(duplicate) {}
        }
        #expect(Chaos.pointNames.filter { $0 == name }.count == 1)
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point: name, .constant(3))).apply()
        #expect(survivor() == 3)
    }

    @Test func catalogueListsItemsPerPoint() {
        let name = uniqueName()
        let bare = InjectionPoint<Void, Int, Never>(name + ".bare") { 0 }
        #expect(Chaos.catalogue.first { $0.name == bare.name }?.items.map(\.name) == [])
        let point = InjectionPoint<Void, Int, Never>(
            name,
            catalogue: [
                CatalogueItem("b") { _ in .constant(1) },
                CatalogueItem("a", parameters: [.number("x", "a number", unit: "km", default: 2)]) { _ in .constant(2)
                },
            ]
        ) { 0 }
        let info = Chaos.catalogue.first { $0.name == point.name }
        #expect(info?.items.map(\.name) == ["a", "b"])
        #expect(info?.items.first?.declaredParameters.first?.description == "x: number (km) = 2 — a number")
    }

    @Test func manyPointsComeAndGoConcurrently() async {
        let prefix = uniqueName()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    for i in 0..<500 {
                        let point = InjectionPoint<Int, Int, Never>("\(prefix).\(task).\(i)") { $0 }
                        _ = point(i)
                    }
                }
            }
        }
        #expect(!Chaos.pointNames.contains { $0.hasPrefix(prefix) })
    }
}
