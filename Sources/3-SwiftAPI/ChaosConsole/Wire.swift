// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import ChaosControl
import ChaosKit
import ChaosNetwork
import Foundation

/// ChaosKit's values as the control protocol's JSON bodies.
extension ChaosConsole {
    static func wire(_ point: PointInfo) -> ControlAPI.Point {
        ControlAPI.Point(
            name: point.name, signature: point.signature,
            items: point.items.map {
                ControlAPI.CatalogueItem(
                    name: $0.name, summary: $0.summary, parameters: $0.declaredParameters.map(wire))
            },
            match: point.matchConditions.map { $0.map(wire) }
        )
    }

    static func wire(_ parameter: CatalogueParameter) -> ControlAPI.Parameter {
        let kind: String
        var choices: [String]?
        switch parameter.kind {
        case .number: kind = "number"
        case .integer: kind = "integer"
        case .boolean: kind = "boolean"
        case .string: kind = "string"
        case .choice(let names):
            kind = "choice"
            choices = names
        case .duration: kind = "duration"
        case .offset: kind = "offset"
        case .date: kind = "date"
        case .strings: kind = "strings"
        }
        let requirement: String
        var defaultValue: ProfileValue?
        switch parameter.requirement {
        case .required: requirement = "required"
        case .optional: requirement = "optional"
        case .defaulted(let value):
            requirement = "defaulted"
            defaultValue = value
        }
        return ControlAPI.Parameter(
            name: parameter.name, kind: kind, choices: choices, unit: parameter.unit, requirement: requirement,
            defaultValue: defaultValue, minimum: parameter.range?.lowerBound, maximum: parameter.range?.upperBound,
            summary: parameter.summary, description: parameter.description
        )
    }

    static func wire(_ live: LiveEntry) -> ControlAPI.Entry {
        let counters = live.counters
        return ControlAPI.Entry(
            id: live.entry.id.number, point: live.entry.pointName, provider: live.entry.providerSummary,
            enabled: live.isEnabled, seen: counters.seen, acted: counters.acted, passed: counters.passed,
            lastAct: counters.lastAct.map {
                ControlAPI.LastAct(
                    callIndex: $0.callIndex, entrySeed: String($0.entrySeed),
                    chaosSeed: $0.chaosSeed.map { String($0) }, date: $0.date)
            },
            leaseEnds: counters.leaseEnds, chaosSeed: String(live.chaosSeed),
            pending: live.isPending ? true : nil, problem: live.problem.map { "\($0)" }
        )
    }

    static func wire(_ request: JournaledRequest) -> ControlAPI.Request {
        let (answer, answeredBy): (String, String?) =
            switch request.answer {
            case .stub(let name): ("stub", name)
            case .responseSet(let name, _): ("responseSet", name)
            case .responder(let name): ("responder", name)
            case .chaos: ("chaos", nil)
            case .passedThrough: ("passedThrough", nil)
            case .refused: ("refused", nil)
            case .client(let name): ("client", name)
            }
        return ControlAPI.Request(
            number: request.number, date: request.date, route: request.route.rawValue, method: request.method,
            url: request.url, answer: answer, answeredBy: answeredBy, summary: request.answer.description,
            conditions: request.conditions, status: request.status, bytes: request.bytes, error: request.error,
            milliseconds: Double(request.duration / .microseconds(1)) / 1_000,
            nearMisses: request.nearMisses.isEmpty ? nil : request.nearMisses.map(wire)
        )
    }

    static func wire(_ miss: NearMiss) -> ControlAPI.NearMiss {
        ControlAPI.NearMiss(
            stub: miss.stub, matcher: miss.matcher, criteria: miss.criteria, satisfied: miss.satisfied,
            differences: miss.differences.map {
                ControlAPI.Difference(
                    part: $0.part.rawValue, name: $0.name, expected: $0.expected, actual: $0.actual,
                    description: $0.description)
            })
    }

    static func wire(_ event: ChaosEvent) -> ControlAPI.Event {
        ControlAPI.Event(
            entry: event.entry?.number, point: event.pointName, provider: event.provider,
            callIndex: event.callIndex, entrySeed: String(event.entrySeed), date: event.date
        )
    }
}
#endif
