import ChaosKit
public import ChaosPoints
public import Foundation

/// Dixie's first example app, reborn: how long until Halley's comet is back at perihelion.
/// The app reads the time through a `WallClock`, so date chaos moves the countdown.
public struct HalleyCountdown: Sendable {
    /// Halley's next perihelion, 2061-07-28 (UTC midnight).
    public static let perihelion = Date(timeIntervalSince1970: 2_889_734_400)

    let clock: any WallClock

    /// A countdown reading `clock` (the chaos-aware one by default).
    public init(clock: any WallClock = ChaosWallClock()) {
        self.clock = clock
    }

    /// Calendar days (UTC) from today until the perihelion day; 0 on the day, negative after.
    public var daysRemaining: Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.dateComponents([.day], from: calendar.startOfDay(for: clock.now), to: Self.perihelion).day ?? 0
    }

    /// The line the app prints.
    public var message: String {
        let days = daysRemaining
        switch days {
        case 1...:
            return
                "Halley's comet returns in \(days.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))) days (2061-07-28)."
        case 0: return "Halley's comet is at perihelion today!"
        default: return "Halley's comet passed perihelion \(-days) days ago; see you in 2134."
        }
    }
}
