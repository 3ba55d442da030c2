// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import Foundation
import HTTPTypes
import Hummingbird

/// The web console's pages: an HTML file with its style sheets and scripts (package
/// resources in `Console/`) inlined under a per-response nonce, so a page needs no other
/// request but the API's.
extension ChaosConsole {
    /// The console: entries, explorations, points, response sets, requests, events, virtual time.
    static let consoleFiles = PageFiles(
        html: "console.html", styles: ["console.css", "time.css", "explorations.css"],
        scripts: ["entries.js", "console.js", "time.js", "explorations.js"])
    /// Every endpoint on the machine, with links to their consoles.
    static let processesFiles = PageFiles(
        html: "processes.html", styles: ["console.css"], scripts: ["entries.js", "processes.js"])

    /// The files of the `Console` folder, read once; nil when the resource bundle is not
    /// beside the program.
    private static let files: [String: String]? = {
        guard let directory = resourceDirectory() else { return nil }
        var files: [String: String] = [:]
        for page in [consoleFiles, processesFiles] {
            for name in [page.html] + page.styles + page.scripts where files[name] == nil {
                guard let text = try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8) else {
                    return nil
                }
                files[name] = text
            }
        }
        return files
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

    func consolePage() -> Response { page(Self.consoleFiles) }

    func processesPage() -> Response { page(Self.processesFiles) }

    /// What every page's `<head>` holds before its styles: no referrer leaves the page, and
    /// an empty icon, so that the browser asks for no `/favicon.ico` (a 401 in the log).
    static let commonHead = """
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <link rel="icon" href="data:,">

        """

    private func page(_ page: PageFiles) -> Response {
        guard let files = Self.files, let html = files[page.html] else {
            return failure(
                .internalServerError, "consoleMissing", subject: "ChaosConsole resources",
                "the console's files (the ChaosConsole resource bundle) are not beside this program; ship the bundle with it, or use chaos ctl"
            )
        }
        let nonce = Self.randomToken().prefix(32)
        let css = page.styles.compactMap { files[$0] }.joined(separator: "\n")
        let js = page.scripts.compactMap { files[$0] }.joined(separator: "\n")
        let text =
            html
            .replacingOccurrences(
                of: "<!-- HEAD -->", with: Self.commonHead + "<style nonce=\"\(nonce)\">\n\(css)</style>"
            )
            .replacingOccurrences(of: "<!-- SCRIPT -->", with: "<script nonce=\"\(nonce)\">\n\(js)</script>")
        var headers = Self.commonHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.contentSecurityPolicy] =
            "default-src 'none'; style-src 'nonce-\(nonce)'; script-src 'nonce-\(nonce)'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

/// One page of the console: its HTML file, and the style sheets and scripts inlined into it,
/// in order.
struct PageFiles: Sendable {
    let html: String
    let styles: [String]
    let scripts: [String]
}
#endif
