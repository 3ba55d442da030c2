public import Foundation
public import Logging

extension Chaos {
    /// How the code was compiled; chaos from the environment only acts in debug builds
    /// unless the app opts in.
    public enum BuildConfiguration: Sendable {
        /// Compiled with DEBUG (e.g. `swift build`, Xcode's Debug).
        case debug
        /// Compiled without DEBUG.
        case release

        /// This build of ChaosKit.
        public static var current: BuildConfiguration {
            #if DEBUG
            .debug
            #else
            .release
            #endif
        }
    }

    /// Switches chaos on from the environment, once at start (like swift-log's bootstrap):
    /// `CHAOS_PROFILE` names a JSON profile file, `CHAOS` holds one-line entries
    /// (see ``ChaosGrammar``), `CHAOS_SEED` fixes the seed.
    ///
    /// It acts only in debug builds, unless `allowInReleaseBuilds` is true: chaos must never
    /// switch on by accident in production (in a release build the variables are ignored
    /// and a warning is logged). Every applied entry and the seed are logged. A bad profile
    /// applies nothing and the error gives file, line, column and JSON path.
    ///
    /// An entry may name one of the app's points that does not exist yet (a `static let`
    /// is made on first use): it waits and applies the moment the point is created (see
    /// ``Chaos/MissingPoints/wait``). One whose name is a couple of letters off a live
    /// point's is logged as a warning with "did you mean" at once; one that never becomes
    /// live, with the nearest names when the session stops or the process exits.
    /// `logger` receives the session's messages.
    /// Returns the session, or nil when nothing was asked for (or the build refuses).
    @discardableResult
    public static func bootstrap(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        allowInReleaseBuilds: Bool = false,
        buildConfiguration: BuildConfiguration = .current,
        watchProfile: Bool = true,
        logger sessionLogger: Logger = Logger(label: "ChaosKit.session")
    ) throws(ChaosError) -> ChaosSession? {
        let path = environment["CHAOS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 }
        let line = environment["CHAOS"].flatMap { $0.isEmpty ? nil : $0 }
        guard path != nil || line != nil else { return nil }
        guard buildConfiguration == .debug || allowInReleaseBuilds else {
            logger.warning(
                "CHAOS/CHAOS_PROFILE ignored: this is a release build; pass allowInReleaseBuilds: true to opt in")
            return nil
        }
        let profile = try path.map { (path: String) throws(ChaosError) in try ChaosProfile.load(contentsOfFile: path) }
        let inline = try line.map { (line: String) throws(ChaosError) in try ChaosGrammar.parse(line) } ?? []
        var seed = profile?.seed ?? UInt64.random(in: .min ... .max)
        if let text = environment["CHAOS_SEED"] {
            guard let fixed = UInt64(text) else {
                throw ChaosError(
                    .invalidProfile, subject: "CHAOS_SEED",
                    "'\(InputExcerpt.of(text))' is not a whole number; give a seed such as 42")
            }
            seed = fixed
        }
        let session = try ChaosSession(
            seed: seed, profilePath: path, fileEntries: profile?.entries ?? [], inline: inline, logger: sessionLogger)
        logger.info("chaos session started", metadata: ["seed": "\(seed)", "entries": "\(session.entries.count)"])
        if watchProfile { session.watch() }
        return session
    }
}
