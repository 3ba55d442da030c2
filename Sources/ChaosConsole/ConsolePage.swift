// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import Foundation
import HTTPTypes
import Hummingbird

/// The web console: console.html with console.css and console.js (package resources)
/// inlined under a per-response nonce, so the page needs no other request but the API's.
extension ChaosConsole {
    /// The three files, read once; nil when the resource bundle is not beside the program.
    private static let files: (html: String, css: String, js: String)? = {
        guard let directory = resourceDirectory() else { return nil }
        func read(_ name: String) -> String? {
            try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        }
        guard let html = read("console.html"), let css = read("console.css"), let js = read("console.js") else {
            return nil
        }
        return (html, css, js)
    }()

    /// The `Console` folder of this target's resource bundle, looked for beside the program
    /// (without `Bundle.module`, which stops the process when the bundle is missing).
    private static func resourceDirectory() -> URL? {
        var places = [Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent()].compactMap { $0 }
        if let resources = Bundle.main.resourceURL { places.append(resources) }
        for place in places {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: place.path) else { continue }
            for name in names.sorted()
            where name.hasSuffix("_ChaosConsole.resources") || name.hasSuffix("_ChaosConsole.bundle") {
                let bundle = place.appendingPathComponent(name)
                for candidate in [
                    bundle.appendingPathComponent("Console"),
                    bundle.appendingPathComponent("Contents/Resources/Console"),
                ]
                where FileManager.default.fileExists(atPath: candidate.appendingPathComponent("console.html").path) {
                    return candidate
                }
            }
        }
        return nil
    }

    func consolePage() -> Response {
        guard let files = Self.files else {
            return failure(
                .internalServerError, "consoleMissing", subject: "ChaosConsole resources",
                "the console's files (the ChaosConsole resource bundle) are not beside this program; ship the bundle with it, or use chaos ctl"
            )
        }
        let nonce = Self.randomToken().prefix(32)
        let page = files.html
            .replacingOccurrences(of: "<!-- STYLE -->", with: "<style nonce=\"\(nonce)\">\n\(files.css)</style>")
            .replacingOccurrences(of: "<!-- SCRIPT -->", with: "<script nonce=\"\(nonce)\">\n\(files.js)</script>")
        var headers = Self.commonHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.contentSecurityPolicy] =
            "default-src 'none'; style-src 'nonce-\(nonce)'; script-src 'nonce-\(nonce)'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
    }
}
#endif
