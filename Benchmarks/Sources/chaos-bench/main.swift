import Foundation

// chaos-bench [--json] [--filter GROUP] [--repetitions N]
var arguments = Array(CommandLine.arguments.dropFirst())
// Hidden: the child process of date_libfaketime_ns (`--date-loop N`, or the variable
// CHAOS_BENCH_DATE_LOOP=N, which also works where the arguments are not visible).
if let count = dateLoopRequest(arguments) {
    print(String(format: "%.3f", dateLoop(count)))
    exit(0)
}
// Hidden: `--hook-loop N` only calls the block-hooked function N times, for profilers
// (valgrind --tool=callgrind) to look at one hooked call without the rest of the suite.
if let index = arguments.firstIndex(of: "--hook-loop"), index + 1 < arguments.count,
    let count = Int(arguments[index + 1])
{
    try hookLoop(count, raw: arguments.contains("raw"))
    exit(0)
}
// Hidden: `--symbol-loop N` applies and reverts one symbol hook N times (for profilers).
if let index = arguments.firstIndex(of: "--symbol-loop"), index + 1 < arguments.count,
    let count = Int(arguments[index + 1])
{
    try symbolLoop(count)
    exit(0)
}
// Hidden: `--core-loop NAME N` runs one core metric's body N times (constant, scoped,
// apply-revert), for callgrind to count its instructions without the rest of the suite.
if let index = arguments.firstIndex(of: "--core-loop"), index + 2 < arguments.count,
    let count = Int(arguments[index + 2])
{
    try coreLoop(arguments[index + 1], count)
    exit(0)
}
let json = arguments.contains("--json")
var filter: String?
var repetitions = 7
if let index = arguments.firstIndex(of: "--filter"), index + 1 < arguments.count { filter = arguments[index + 1] }
if let index = arguments.firstIndex(of: "--repetitions"), index + 1 < arguments.count,
    let value = Int(arguments[index + 1])
{
    repetitions = max(5, value)
}

let builders: [(String, @MainActor () throws -> Group?)] = [
    ("core", { try coreGroup() }),
    ("hooks", { try hooksGroup() }),
    ("network", { try networkGroup() }),
    ("profiles", { profilesGroup() }),
    ("console", { try consoleGroup() }),
    ("run", { try runGroup() }),
    ("time", { try timeGroup() }),
    ("explore", { try exploreGroup() }),
]

var results: [(String, Double)] = []
/// Each group's own figures: a ratio compares figures measured together (a group may
/// measure a baseline another group measures too, e.g. date_plain_ns).
var groupResults: [String: [(String, Double)]] = [:]
for (name, build) in builders where filter == nil || filter == name {
    guard let group = try build() else { continue }
    let measured = measure(group, repetitions: repetitions)
    groupResults[name] = measured
    results += measured.filter { metric in !results.contains { $0.0 == metric.0 } }
    if !json {
        print("== \(group.name)")
        for (metric, value) in measured {
            print(metric.padding(toLength: 34, withPad: " ", startingAt: 0), String(format: "%12.2f", value))
        }
    }
}

@MainActor func ratio(_ a: String, _ b: String) -> Double? {
    // The figures of the group that measured `a`, where it measured `b` too.
    let figures = groupResults.values.first { $0.contains { $0.0 == a } } ?? results
    guard let x = figures.first(where: { $0.0 == a })?.1,
        let y = (figures.first(where: { $0.0 == b }) ?? results.first(where: { $0.0 == b }))?.1, y > 0
    else { return nil }
    return x / y
}

// Derived metrics: one figure over another its group measured interleaved with it.
let derived = [
    // How much faster two jobs explore the same space than one.
    ("explore_jobs2_speedup", "explore_jobs1_ms", "explore_jobs2_ms"),
    // What power loss's log costs a run that appends, and one that overwrites in place.
    ("power_loss_append_ratio", "power_loss_append_ms", "power_loss_append_elsewhere_ms"),
    ("power_loss_overwrite_ratio", "power_loss_overwrite_ms", "power_loss_overwrite_elsewhere_ms"),
    // time.Now() of a static Go program under the seccomp delivery's patched vDSO, against plain.
    ("go_time_now_offset_ratio", "go_time_now_offset_ns", "go_time_now_plain_ns"),
    ("go_time_now_frozen_ratio", "go_time_now_frozen_ns", "go_time_now_plain_ns"),
    ("go_time_now_virtual_ratio", "go_time_now_virtual_ns", "go_time_now_plain_cpu_ns"),
]
for (name, a, b) in derived {
    if let value = ratio(a, b) { results.append((name, value)) }
}
// The bandwidth entry's time against the exact time its rate gives (2,000 ms).
if let transfer = results.first(where: { $0.0 == "bandwidth_2mb_at_1mbps_ms" })?.1 {
    results.append(("bandwidth_accuracy", transfer / 2000))
}

if !json {
    let budgets: [(String, Double?)] = [
        (
            "point_passthrough_ns - direct_call_ns (<= 2)",
            {
                guard let p = results.first(where: { $0.0 == "point_passthrough_ns" })?.1,
                    let d = results.first(where: { $0.0 == "direct_call_ns" })?.1
                else { return nil }
                return p - d
            }()
        ),
        (
            "swift_dependencies_date_ns / point_scoped_ns (>= 10)",
            ratio("swift_dependencies_date_ns", "point_scoped_ns")
        ),
        ("point_constant_ns (<= 10)", results.first(where: { $0.0 == "point_constant_ns" })?.1),
        ("apply_revert_ns (<= 2000)", results.first(where: { $0.0 == "apply_revert_ns" })?.1),
        ("profile_load_apply_us (<= 5000)", results.first(where: { $0.0 == "profile_load_apply_us" })?.1),
        ("console_apply_ms (<= 5)", results.first(where: { $0.0 == "console_apply_ms" })?.1),
        ("journal_call_ns (<= 200)", results.first(where: { $0.0 == "journal_call_ns" })?.1),
        (
            "urlsession_chaos_stub_rps / urlsession_bare_protocol_rps (>= 0.9)",
            ratio("urlsession_chaos_stub_rps", "urlsession_bare_protocol_rps")
        ),
        ("ffi_hook_block_ns / ffi_raw_c_ns (<= 1.3)", ratio("ffi_hook_block_ns", "ffi_raw_c_ns")),
        ("date_system_clock_ns / date_plain_ns (<= 1.1)", ratio("date_system_clock_ns", "date_plain_ns")),
        ("date_system_clock_ns / date_libfaketime_ns (<= 1)", ratio("date_system_clock_ns", "date_libfaketime_ns")),
        ("chaos_run_date_ms / faketime_date_ms (<= 1.0)", ratio("chaos_run_date_ms", "faketime_date_ms")),
        ("chaos_run_write_ms / plain_write_ms (<= 1.05)", ratio("chaos_run_write_ms", "plain_write_ms")),
        ("seccomp_write_ms / strace_inject_write_ms (<= 0.1)", ratio("seccomp_write_ms", "strace_inject_write_ms")),
        ("virtual_hour_sleep_ms (<= 5)", results.first(where: { $0.0 == "virtual_hour_sleep_ms" })?.1),
        ("date_virtual_ns / date_plain_ns (<= 1.1)", ratio("date_virtual_ns", "date_plain_ns")),
        (
            "explore_inprocess_placements_per_s (>= 20000)",
            results.first(where: { $0.0 == "explore_inprocess_placements_per_s" })?.1
        ),
        ("explore_run_ms / chaos_run_ms (<= 1.2)", ratio("explore_run_ms", "chaos_run_ms")),
        ("explore_jobs2_speedup (>= 1.6)", results.first(where: { $0.0 == "explore_jobs2_speedup" })?.1),
        ("power_loss_append_ratio (<= 1.5)", results.first(where: { $0.0 == "power_loss_append_ratio" })?.1),
        ("bandwidth_accuracy (0.95 to 1.05)", results.first(where: { $0.0 == "bandwidth_accuracy" })?.1),
        ("go_time_now_offset_ratio (<= 2)", results.first(where: { $0.0 == "go_time_now_offset_ratio" })?.1),
        ("go_time_now_frozen_ratio (<= 2)", results.first(where: { $0.0 == "go_time_now_frozen_ratio" })?.1),
        ("go_time_now_virtual_ratio (<= 2)", results.first(where: { $0.0 == "go_time_now_virtual_ratio" })?.1),
        (
            "power_loss_overwrite_ratio (information)",
            results.first(where: { $0.0 == "power_loss_overwrite_ratio" })?.1
        ),
    ]
    print("== budgets")
    for (label, value) in budgets {
        if let value { print(label.padding(toLength: 66, withPad: " ", startingAt: 0), String(format: "%8.2f", value)) }
    }
} else {
    let body = results.map { "\"\($0.0)\": \(String(format: "%.3f", $0.1))" }.joined(separator: ", ")
    print("{\(body)}")
}
