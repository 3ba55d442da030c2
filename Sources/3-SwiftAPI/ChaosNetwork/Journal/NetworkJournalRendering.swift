public import ChaosKit
import Foundation
import HTTPTypes

// How network calls show in the call journal (``CallJournal``): requests redacted by the HAR
// rules (``HARRedaction/default``), responses by status and size.

extension NetworkRequest: CallJournalRendering {
    /// The method, the URL with redacted query values, and the header names and values
    /// with credentials and cookie values redacted (the body is left out).
    public var journalText: String {
        let redaction = HARRedaction.default
        var text = "\(head.method.rawValue) " + redaction.redact(url: url?.absoluteString ?? description)
        let headers = head.headerFields.map { field -> String in
            let name = field.name.canonicalName
            let value: String =
                switch name {
                case "cookie": redaction.redact(cookieHeader: field.value)
                case "set-cookie": redaction.redact(setCookie: field.value)
                default: redaction.headers.contains(name) ? redaction.replacement : field.value
                }
            return "\(field.name.rawName): \(value)"
        }
        if !headers.isEmpty { text += " [\(headers.joined(separator: ", "))]" }
        if let body, !body.isEmpty { text += " (\(body.count) bytes)" }
        return text
    }

    /// A request may carry credentials: network points are journaled only when named.
    public static var journalMayHoldSecrets: Bool { true }
}

extension NetworkResponse: CallJournalRendering {
    /// `200 (12 bytes)`.
    public var journalText: String { description }
    /// The status.
    public var journalStatus: Int? { statusCode }
    /// The body's size.
    public var journalBytes: Int? { body.count }
}
