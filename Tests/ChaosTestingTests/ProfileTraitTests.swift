import ChaosKit
import ChaosTesting
import Testing

enum ProfileTraitPoints {
    static let greeting = InjectionPoint<Void, String, Never>("chaos-testing.profile-greeting") { "hello" }
    static let number = InjectionPoint<Void, Int, Never>("chaos-testing.profile-number") { 7 }
}

@Suite struct ProfileTraitTests {
    @Test(
        .chaos(profile: "Profiles/greeting-shout.json", points: ProfileTraitPoints.greeting, ProfileTraitPoints.number))
    func profileEntriesApplyToTheTestWithTheProfilesSeed() {
        #expect(ProfileTraitPoints.greeting() == "HELLO FROM A PROFILE")
        #expect(ProfileTraitPoints.number() == 7, "disabled entries stay off")
        #expect(Chaos.currentScope?.seed == 11)
    }

    @Test func outsideTheTraitTheOriginalAnswers() {
        #expect(ProfileTraitPoints.greeting() == "hello")
    }

    @Test(
        .chaos(
            profile: "Profiles/greeting-shout.json", seed: 99, points: ProfileTraitPoints.greeting,
            ProfileTraitPoints.number))
    func anExplicitSeedWins() {
        #expect(Chaos.currentScope?.seed == 99)
    }

    @Test func aMissingProfileFailsTheTestCaseWithItsPath() async {
        let trait = ChaosTrait.chaos(profile: "Profiles/absent.json")
        let test = Test.current!
        await #expect {
            try await trait.provideScope(for: test, testCase: nil) {}
        } throws: { error in
            (error as? ChaosError)?.kind == .invalidProfile && "\(error)".contains("absent.json")
        }
    }
}
