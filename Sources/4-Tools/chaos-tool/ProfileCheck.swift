import ArgumentParser
import ChaosHooks
import ChaosKit

/// Which delivery a profile is meant for: what `chaos validate --for` names. Each one's
/// check is the very function that delivery runs, so that `validate` and the delivery
/// never disagree.
enum Delivery: String, CaseIterable, ExpressibleByArgument {
    /// In a Swift program (`Chaos.bootstrap`, `CHAOS_PROFILE`, a session, the console):
    /// every point is checked fully, except an app's own points that do not exist in this
    /// tool, which wait in the program until it creates them.
    case app
    /// Under `chaos run`: system points only, compiled into the preload library's plan.
    case run
}

/// What a profile check found besides errors.
struct ProfileCheckReport {
    /// Entries that would wait for their point (app delivery only).
    var waiting: [ChaosProfile.Entry] = []
    /// The plan `chaos run` would execute (run delivery only).
    var plan: SystemRunPlan?
}

enum ProfileCheck {
    /// The checks `delivery` makes before it applies `profile`; an error is located at the
    /// value to fix.
    static func check(_ profile: ChaosProfile, for delivery: Delivery) throws(ChaosError) -> ProfileCheckReport {
        switch delivery {
        case .app:
            let waiting = try profile.validate(missingPoints: .wait)
            try SystemRunPlan.checkEngineLimit(profile, under: "a Swift program")
            return ProfileCheckReport(waiting: waiting)
        case .run:
            return ProfileCheckReport(plan: try runPlan(profile))
        }
    }

    /// What `chaos run` executes, and so all it checks.
    static func runPlan(_ profile: ChaosProfile) throws(ChaosError) -> SystemRunPlan {
        try SystemRunPlan.compile(profile)
    }
}
