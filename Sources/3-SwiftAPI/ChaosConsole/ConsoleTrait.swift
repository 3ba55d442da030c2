// ChaosConsole's server is built on Hummingbird, whose tree (SwiftNIO, swift-crypto,
// async-http-client and more) would otherwise be resolved and built by every app that
// depends on ChaosKit. So the module's API exists only with the package trait `Console`:
//
//     .package(url: "https://github.com/…/ChaosKit.git", branch: "main", traits: ["Console"])
//
// Without it, the names an app reaches for first are here, unavailable, so that the
// compiler says what to change instead of "cannot find 'ChaosConsole' in scope".
#if !Console
public import ChaosKit

/// Unavailable: ChaosConsole's server is built only with the package trait `Console`.
@available(
    *, unavailable,
    message: "ChaosConsole is built without its server: add traits: [\"Console\"] to the ChaosKit package dependency"
)
public final class ChaosConsole: Sendable {}

/// Unavailable: ChaosConsole's server is built only with the package trait `Console`.
@available(
    *, unavailable,
    message: "ChaosConsole is built without its server: add traits: [\"Console\"] to the ChaosKit package dependency"
)
public struct ChaosBootstrap: Sendable {}

extension Chaos {
    /// Unavailable: ChaosConsole's server is built only with the package trait `Console`.
    @available(
        *, unavailable,
        message:
            "ChaosConsole is built without its server: add traits: [\"Console\"] to the ChaosKit package dependency"
    )
    public static func bootstrap<Activation>(control: Activation, environment: [String: String] = [:]) {}

    /// Unavailable: ChaosConsole's server is built only with the package trait `Console`.
    @available(
        *, unavailable,
        message:
            "ChaosConsole is built without its server: add traits: [\"Console\"] to the ChaosKit package dependency"
    )
    public static func bootstrapSynchronously<Activation>(control: Activation, environment: [String: String] = [:]) {}
}
#endif
