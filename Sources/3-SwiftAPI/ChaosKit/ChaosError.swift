/// Every mistake a user of ChaosKit can make, with a message that says what to fix.
///
/// Apply is all-or-nothing: when `apply()` throws one of these, nothing was changed.
public struct ChaosError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a value tests and tools can switch over.
    public enum Kind: Sendable, Equatable {
        /// No live injection point or hook has this name.
        case unknownPoint
        /// Two live points were created with the same name.
        case duplicatePointName
        /// A value's type does not match what the point returns or takes.
        case valueTypeMismatch
        /// A provider parameter is out of range (probability, times, empty lists, …).
        case invalidProvider
        /// The entry is already applied by this `Chaos` (apply it once, or make a new entry).
        case alreadyApplied
        /// The entry was never applied (or is already reverted).
        case notApplied
        /// A C signature or a C value does not fit (arity, type, struct layout).
        case signatureMismatch
        /// A symbol to hook is not imported by any of the images searched.
        case symbolNotFound
        /// The slot is already hooked by something else.
        case alreadyHooked
        /// A profile could not be read or decoded.
        case invalidProfile
        /// This feature does not exist on the current platform.
        case unsupportedPlatform
        /// The operating system refused (mprotect, dlopen, …).
        case systemFailure
        /// A network stub, response set, HAR file or route is not usable.
        case invalidNetworkConfiguration
        /// An exploration's body fails with no fault placed (`Chaos.explore`): nothing can
        /// be learned from placing faults in it until it passes.
        case explorationBaselineFailed
    }

    /// What went wrong.
    public let kind: Kind
    /// The entry (or point, symbol, file) the error is about, when there is one.
    public let subject: String?
    /// What happened and what to do about it.
    public let message: String
    /// Where in an input file the mistake is (`file:line:column at $.json.path`), when an
    /// inner check knows better than the entry that carries it.
    var sourceLocation: String?

    /// Creates an error; `message` should say what to change.
    public init(_ kind: Kind, subject: String? = nil, _ message: String) {
        self.kind = kind
        self.subject = subject
        self.message = message
    }

    /// The subject (when known) and the message, as one line.
    public var description: String {
        if let subject { return "\(subject): \(message)" }
        return message
    }

    /// Errors are equal when they have the same kind, subject and message.
    public static func == (lhs: ChaosError, rhs: ChaosError) -> Bool {
        lhs.kind == rhs.kind && lhs.subject == rhs.subject && lhs.message == rhs.message
    }

    /// The same error, attributed to `subject` when it has none yet.
    public func about(_ subject: String) -> ChaosError {
        self.subject == nil ? ChaosError(kind, subject: subject, message) : self
    }
}
