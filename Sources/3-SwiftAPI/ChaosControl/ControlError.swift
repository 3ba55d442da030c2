/// What went wrong talking to a control endpoint, or finding one: the endpoint's own error
/// (``status`` and the `kind` it sent), or the client's.
public struct ControlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The endpoint's `kind` (`invalidProfile`, `unauthorized`, `notApplied` …), or the
    /// client's own: `unreachable` (nothing answers), `badResponse` (the answer is not the
    /// protocol), `invalidEndpoint` (an address that cannot be used), `endpointFiles` (the
    /// directory of endpoint files cannot be used), `noSuchProcess`.
    public let kind: String
    /// The HTTP status the endpoint answered with; nil for the client's own errors.
    public let status: Int?
    /// What the error is about (a profile's `file:line:column at $.path`, an entry, a file).
    public let subject: String?
    /// What happened and what to do about it.
    public let message: String

    /// An error.
    public init(_ kind: String, status: Int? = nil, subject: String? = nil, _ message: String) {
        self.kind = kind
        self.status = status
        self.subject = subject
        self.message = message
    }

    /// `subject: message`, or the message alone.
    public var description: String {
        if let subject { return "\(subject): \(message)" }
        return message
    }
}
