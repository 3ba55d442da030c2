// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import ChaosControl
import ChaosKit
import Foundation
import HTTPTypes
import Hummingbird

/// Profiles as text: checked as they are typed, applied, and the applied state exported.
extension ChaosConsole {
    /// A profile as a request carries it: JSON, or a `CHAOS` line when the body is
    /// `text/plain`. Read by the parser `Chaos.bootstrap` uses for each, and errors located
    /// in the text sent.
    struct ProfileText {
        let body: Data
        let isChaosLine: Bool
        /// What located errors name (`?source=`), as the parsers put it in their subjects.
        let source: String

        init(_ request: Request, body: Data) {
            self.body = body
            let type = request.headers[.contentType]?.lowercased() ?? ""
            isChaosLine = type.hasPrefix("text/plain")
            var source = "<control request>"
            if let named = request.uri.queryParameters["source"], !named.isEmpty {
                source = InputExcerpt.of(named, limit: 200)
            }
            self.source = source
        }

        /// The profile `request` carries, its body read within the size limit.
        static func read(_ request: Request) async -> Result<ProfileText, ResponseFailure> {
            await ChaosConsole.collect(request).map { ProfileText(request, body: $0) }
        }

        var format: String { isChaosLine ? "chaos" : "json" }

        func profile() throws(ChaosError) -> ChaosProfile {
            guard isChaosLine else { return try ChaosProfile.decode(json: body, file: source) }
            guard let line = String(validating: body, as: UTF8.self) else {
                throw ChaosError(.invalidProfile, subject: source, "the CHAOS line is not UTF-8 text")
            }
            return ChaosProfile(entries: try ChaosGrammar.parse(line, source: source))
        }

        /// `error` as the endpoint answers it, with where it is in the text when the
        /// parsers said so (`SOURCE:LINE:COLUMN at PATH`, `SOURCE column N`).
        func detail(_ error: ChaosError) -> ControlAPI.ErrorBody.Detail {
            ControlAPI.ErrorBody.Detail(
                kind: "\(error.kind)", subject: error.subject, message: error.message, location: location(error.subject)
            )
        }

        func location(_ subject: String?) -> ControlAPI.SourceLocation? {
            guard let subject else { return nil }
            let text = String(decoding: body, as: UTF8.self)
            if isChaosLine {
                // The grammar counts characters from 1 along the whole text.
                let prefix = source + " column "
                guard subject.hasPrefix(prefix), let column = Int(subject.dropFirst(prefix.count)), column >= 1 else {
                    return nil
                }
                let before = text.prefix(column - 1)
                let line = before.reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
                let lineStart = before.lastIndex(of: "\n").map { before.index(after: $0) } ?? before.startIndex
                return ControlAPI.SourceLocation(
                    line: line, column: before.distance(from: lineStart, to: before.endIndex) + 1,
                    offset: before.utf16.count)
            }
            // The JSON reader counts lines from 1, and columns from 1 in Unicode scalars.
            let prefix = source + ":"
            guard subject.hasPrefix(prefix) else { return nil }
            var rest = Substring(subject.dropFirst(prefix.count))
            var path: String?
            if let at = rest.range(of: " at ") {
                path = String(rest[at.upperBound...])
                rest = rest[..<at.lowerBound]
            }
            let numbers = rest.split(separator: ":").compactMap { Int($0) }
            guard numbers.count == 2 else { return nil }
            var line = 1
            var column = 1
            var offset = 0
            for scalar in text.unicodeScalars {
                if line > numbers[0] || (line == numbers[0] && column >= numbers[1]) { break }
                if scalar == "\n" {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
                offset += scalar.utf16.count
            }
            return ControlAPI.SourceLocation(line: numbers[0], column: numbers[1], offset: offset, path: path)
        }
    }

    /// A seed for a profile that names none, below 2^53 so that an export can write it and
    /// the export applies again to the same random choices.
    static func exportableSeed() -> UInt64 {
        UInt64.random(in: 0..<(1 << 53))
    }

    /// `POST /v1/profile/validate`: the checks an apply makes (`chaos validate` makes the
    /// same ones), against this process's points, applying nothing and using up no entry id.
    func validateProfile(_ request: Request) async -> Response {
        let text: ProfileText
        switch await ProfileText.read(request) {
        case .success(let read): text = read
        case .failure(let failure): return failure.response
        }
        do throws(ChaosError) {
            let profile = try text.profile()
            let waiting = try profile.validate(missingPoints: Self.missingPoints(for: request))
            return json(
                ControlAPI.Validation(
                    valid: true, format: text.format, entries: profile.entries.filter(\.enabled).count,
                    waiting: waiting.map(\.pointName)))
        } catch {
            return json(ControlAPI.Validation(valid: false, format: text.format, error: text.detail(error)))
        }
    }

    /// `GET /v1/profile[?partial=true]`: every live entry as one JSON profile, which applies
    /// again to the same effect. An entry no profile can spell (made in code from a typed
    /// provider) refuses the export, unless `partial` is asked for: then the profile's
    /// `description` names each entry left out. So does it a seed the profile cannot hold.
    func exportProfile(_ request: Request) -> Response {
        let partial = Self.flag("partial", in: request)
        var entries: [ChaosProfile.Entry] = []
        var seeds: [UInt64] = []
        var leftOut: [String] = []
        for live in Chaos.liveEntries {
            let named = "\(live.entry.id) (\(InputExcerpt.of(live.entry.description, limit: 200)))"
            guard let provider = live.entry.providerDescription else {
                leftOut.append("\(named): made in code from a typed provider, which no profile can spell")
                continue
            }
            let entry = ChaosProfile.Entry(pointName: live.entry.pointName, provider: provider, enabled: live.isEnabled)
            do throws(ChaosError) {
                _ = try ChaosProfile(entries: [entry]).jsonText()
            } catch {
                leftOut.append("\(named): \(error.message)")
                continue
            }
            entries.append(entry)
            if !seeds.contains(live.chaosSeed) { seeds.append(live.chaosSeed) }
        }
        if !leftOut.isEmpty, !partial {
            return failure(
                .conflict, "notExportable", subject: "\(leftOut.count) live entries",
                "these cannot be written as a profile: \(leftOut.joined(separator: "; ")); revert them, or export the rest with ?partial=true (chaos ctl export --partial), whose description names what it left out"
            )
        }
        var notes = leftOut.map { "left out \($0)" }
        var seed = seeds.first
        if let first = seed, first >= 1 << 53 {
            notes.append(
                "the seed \(first) is above 2^53, which a profile cannot hold: random choices differ when this profile is applied"
            )
            seed = nil
        }
        if seeds.count > 1 {
            notes.append(
                "the entries were applied with \(seeds.count) seeds and a profile holds one: entries not applied with the first draw differently"
            )
        }
        var text: String
        do throws(ChaosError) {
            text = try ChaosProfile(seed: seed, entries: entries).jsonText()
        } catch {
            return failure(error)
        }
        if !notes.isEmpty, let note = try? ControlAPI.encoder().encode(notes.joined(separator: "; ")) {
            // "description" sorts before "entries", as the rest of the object is sorted.
            text = "{\"description\":\(String(decoding: note, as: UTF8.self)),\(text.dropFirst())"
        }
        var headers = Self.commonHeaders
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
#endif
