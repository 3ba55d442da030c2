import ChaosKit

/// Points the 100-entry profile targets; kept alive for the whole run.
@MainActor let profilePoints: [InjectionPoint<Int, Int, Never>] = (0..<100).map { index in
    InjectionPoint(
        "bench.profile.\(index)",
        catalogue: [
            CatalogueItem("plus", "adds a number", parameters: [.integer("value", "how much to add", default: 1)]) {
                parameters in
                let amount = try parameters.int("value")
                return .block { env in env.arguments &+ amount }
            }
        ]
    ) { $0 &+ index }
}

/// A 100-entry profile mixing constants, sequences, modifiers and catalogue items.
@MainActor func hundredEntryProfile() -> String {
    _ = profilePoints
    let entries = (0..<100).map { index -> String in
        switch index % 4 {
        case 0: #"{"point": "bench.profile.\#(index)", "provider": {"constant": \#(index)}}"#
        case 1:
            #"{"point": "bench.profile.\#(index)", "provider": {"sequential": [{"constant": 1}, "original"], "probability": 0.5}}"#
        case 2:
            #"{"point": "bench.profile.\#(index)", "provider": {"item": "plus", "parameters": {"value": \#(index)}, "times": 3}}"#
        default: #"{"point": "bench.profile.\#(index)", "provider": "original", "enabled": true}"#
        }
    }
    return "{\"seed\": 42, \"entries\": [\n" + entries.joined(separator: ",\n") + "\n]}"
}

@MainActor func profilesGroup() -> Group {
    let json = hundredEntryProfile()
    return Group(
        name: "profiles",
        metrics: [
            // Parse, validate and apply, then revert so that every iteration starts clean.
            Metric(name: "profile_load_apply_us", unit: .microseconds, iterations: 300) { n in
                timed(n) {
                    let chaos = try! ChaosProfile.decode(json: json).apply()
                    chaos.revertAll()
                }
            }
        ])
}
