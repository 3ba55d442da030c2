import ChaosKit
import Foundation
import HTTPTypes
import Testing

@testable import ChaosNetwork

/// How network calls show in the call journal: requests redacted by the HAR rules,
/// responses with their status and size.
@Suite struct NetworkJournalRenderingTests {
    @Test func requestsAreRedactedByTheHARRulesAndHoldSecrets() {
        var head = HTTPRequest(
            method: .post, scheme: "https", authority: "api.test", path: "/login?user=ann&access_token=abc123")
        head.headerFields[.authorization] = "Bearer s3cret"
        head.headerFields[.cookie] = "session=xyz; theme=dark"
        head.headerFields[.accept] = "application/json"
        let text = NetworkRequest(head, body: Data("{\"password\": \"hunter2\"}".utf8)).journalText
        #expect(text.hasPrefix("POST https://api.test/login?user=ann&access_token="))
        for secret in ["abc123", "s3cret", "xyz", "hunter2"] { #expect(!text.contains(secret), "\(text)") }
        #expect(text.contains("Authorization: [redacted]") && text.contains("Accept: application/json"))
        #expect(text.contains("(23 bytes)"), "the body's size, not its content")
        #expect(NetworkRequest.journalMayHoldSecrets)
    }

    @Test func responsesCarryTheirStatusAndSize() {
        let response = NetworkResponse(HTTPResponse(status: .notFound), body: Data("missing".utf8))
        #expect(response.journalText == "404 (7 bytes)")
        #expect(response.journalStatus == 404 && response.journalBytes == 7)
    }
}
