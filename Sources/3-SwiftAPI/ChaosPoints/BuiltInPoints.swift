public import ChaosKit

extension Chaos {
    /// Creates the built-in injection points (`clock.now`, `clock.timeZone`, `clock.sleep`,
    /// `strings.localized`, `location.current`, `location.updates`) with their catalogues,
    /// so that name-based entries and profiles can find them before any code has used them.
    ///
    /// Points are created on first use anyway; call this before applying a profile that
    /// names a built-in point the program may not have touched yet.
    public static func registerBuiltInPoints() {
        _ = ChaosClock.now
        _ = ChaosClock.timeZone
        _ = ChaosClock.sleep
        _ = ChaosStrings.localized
        _ = ChaosLocation.current
        _ = ChaosLocation.updates
    }
}
