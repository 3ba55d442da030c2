import CRawFFIFloor
import ChaosHooks
import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

typealias AddFunction = @convention(c) (Int32, Int32) -> Int32

/// The function every FFI benchmark ends up calling.
private let realAdd: AddFunction = { $0 &+ $1 }

/// Where the libfaketime library lives when Debian's `libfaketime` is installed.
let libfaketimePath = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

/// `chaos-bench --date-loop N`: the child process of `date_libfaketime_ns` (run under
/// libfaketime), printing nanoseconds per `Date()`.
func dateLoop(_ iterations: Int) -> Double {
    var last = Date.distantPast
    _ = Date()
    let elapsed = timed(iterations) { last = Date() }
    blackHole(last)
    return Double(elapsed) / Double(iterations)
}

/// The iteration count of `--date-loop N` / `CHAOS_BENCH_DATE_LOOP=N`, if asked for.
func dateLoopRequest(_ arguments: [String]) -> Int? {
    if let index = arguments.firstIndex(of: "--date-loop"), index + 1 < arguments.count {
        return Int(arguments[index + 1])
    }
    return ProcessInfo.processInfo.environment["CHAOS_BENCH_DATE_LOOP"].flatMap { Int($0) }
}

/// Runs this binary with `--date-loop` under libfaketime (offset -30y); nil when the
/// library is absent or the child fails (the metric is then omitted, never faked).
func libfaketimeDateNanoseconds(_ iterations: Int) -> Double? {
    guard FileManager.default.fileExists(atPath: libfaketimePath) else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = ["--date-loop", String(iterations)]
    var environment = ProcessInfo.processInfo.environment
    environment["LD_PRELOAD"] = libfaketimePath
    environment["CHAOS_BENCH_DATE_LOOP"] = String(iterations)
    environment["FAKETIME"] = "-30y"
    // Monotonic clocks stay real, as under the system clock point (else sleeps hang).
    environment["DONT_FAKE_MONOTONIC"] = "1"
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    do { try process.run() } catch { return nil }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0,
        let text = String(data: output, encoding: .utf8)?.split(separator: "\n").last,
        let value = Double(text)
    else { return nil }
    return value
}

/// The benchmark floor of ``FFIClosure``: a libffi closure of `AddFunction` whose handler
/// is C code that only forwards to the original with `ffi_call` (CRawFFIFloor).
final class RawForwardingClosure: @unchecked Sendable {
    // Immutable after init; the C handle is freed only in deinit.
    private let handle: UnsafeMutableRawPointer
    /// The closure, callable as the function it forwards to.
    let function: AddFunction

    init(original: AddFunction) throws {
        var code: UnsafeMutableRawPointer?
        guard
            let handle = chaos_bench_make_raw_forwarding_closure(
                unsafeBitCast(original, to: UnsafeMutableRawPointer.self), &code),
            let code
        else {
            throw ChaosError(.systemFailure, "libffi could not allocate the raw benchmark closure")
        }
        self.handle = handle
        self.function = unsafeBitCast(code, to: AddFunction.self)
    }

    deinit {
        chaos_bench_free_raw_forwarding_closure(handle)
    }
}

#if os(Linux)
/// `realAdd` in a slot hooked by a point whose `.block` calls the original: what
/// `ffi_hook_block_ns` measures. Keep the hook and the `Chaos` alive while calling.
func blockHookedAdd(name: String, signature: CSignature) throws -> (
    hook: CFunctionHook, chaos: Chaos, function: AddFunction
)? {
    let slot = UnsafeMutablePointer<AddFunction?>.allocate(capacity: 1)
    slot.initialize(to: realAdd)
    let hook = try CFunctionHook(name: name, slot: slot, signature: signature)
    let chaos = Chaos(seed: 1)
    try chaos.profile(hook.entry(.block { env in env.callOriginal() })).apply()
    guard let function = slot.pointee else { return nil }
    return (hook, chaos, function)
}
#endif

/// `chaos-bench --hook-loop N [raw]`: N calls of a slot hooked with a `.block` calling the
/// original (or, with `raw`, of the raw C forwarding closure, the floor).
func hookLoop(_ iterations: Int, raw: Bool) throws {
    #if os(Linux)
    let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
    if raw {
        let closure = try RawForwardingClosure(original: realAdd)
        let function = closure.function
        var sum: Int32 = 0
        for _ in 0..<iterations { sum = function(sum, 1) }
        precondition(sum == Int32(truncatingIfNeeded: iterations), "the raw closure lost calls")
        withExtendedLifetime(closure) {}
        return
    }
    guard let (hook, chaos, hooked) = try blockHookedAdd(name: "bench.hooks.loop", signature: signature) else { return }
    var sum: Int32 = 0
    for _ in 0..<iterations { sum = hooked(sum, 1) }
    precondition(sum == Int32(truncatingIfNeeded: iterations), "the hooked add lost calls")
    chaos.revertAll()
    withExtendedLifetime(hook) {}
    #endif
}

/// `--symbol-loop N`: only applies and reverts the getenv symbol hook N times, for profilers.
func symbolLoop(_ iterations: Int) throws {
    #if os(Linux)
    let symbolHook = try CFunctionHook(
        name: "bench.hooks.getenv.loop", symbol: "getenv",
        signature: CSignature(returns: .cString, arguments: [.cString]))
    let entry = symbolHook.entry(.original)
    let builder = Chaos(seed: 1)
    for _ in 0..<iterations {
        try builder.profile(entry).apply()
        try builder.revert(entry)
    }
    #endif
}

func hooksGroup() throws -> Group? {
    #if os(Linux)
    let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
    let raw = try RawForwardingClosure(original: realAdd)
    let rawFunction = raw.function

    guard let (hook, chaos, hookedFunction) = try blockHookedAdd(name: "bench.hooks.add", signature: signature) else {
        return nil
    }

    SystemPoints.register()
    let clockEntry = ProfileEntry(
        point: "system.clock", .catalogue("offset", ProfileParameters(["by": .string("-30y")])))
    let symbolHook = try CFunctionHook(
        name: "bench.hooks.getenv", symbol: "getenv",
        signature: CSignature(returns: .cString, arguments: [.cString]))
    let symbolEntry = symbolHook.entry(.original)
    let hasFaketime = libfaketimeDateNanoseconds(1_000) != nil

    var metrics: [Metric] = [
        Metric(name: "ffi_raw_c_ns", unit: .nanoseconds, iterations: 2_000_000) { n in
            var sum: Int32 = 0
            let elapsed = timed(n) { sum = rawFunction(sum, 1) }
            blackHole(sum)
            return elapsed
        },
        Metric(name: "ffi_hook_block_ns", unit: .nanoseconds, iterations: 2_000_000) { n in
            var sum: Int32 = 0
            let elapsed = timed(n) { sum = hookedFunction(sum, 1) }
            blackHole(sum)
            return elapsed
        },
        datePlainMetric(),
        Metric(name: "date_system_clock_ns", unit: .nanoseconds, iterations: 2_000_000) { n in
            let clock = Chaos(seed: 1)
            try! clock.profile(clockEntry).apply()
            defer { clock.revertAll() }
            var last = Date.distantPast
            let elapsed = timed(n) { last = Date() }
            // 30 years back is before 2017 (1.5e9 s): the point moved Date().
            precondition(last.timeIntervalSince1970 < 1.5e9, "the clock point did not move Date()")
            blackHole(last)
            return elapsed
        },
    ]
    if hasFaketime {
        metrics.append(
            Metric(name: "date_libfaketime_ns", unit: .nanoseconds, iterations: 2_000_000) { n in
                UInt64((libfaketimeDateNanoseconds(n) ?? .nan) * Double(n))
            })
    }
    metrics.append(
        Metric(name: "symbol_apply_revert_us", unit: .microseconds, iterations: 200) { n in
            let builder = Chaos(seed: 1)
            return timed(n) {
                try! builder.profile(symbolEntry).apply()
                try! builder.revert(symbolEntry)
            }
        })
    return Group(name: "hooks", metrics: metrics, keepAlive: [raw, hook, chaos, symbolHook])
    #else
    return nil
    #endif
}

/// `date_plain_ns`: Foundation's `Date()` with nothing applied (the baseline of the clock
/// figures; the hooks and time groups each measure it beside their own).
func datePlainMetric() -> Metric {
    Metric(name: "date_plain_ns", unit: .nanoseconds, iterations: 2_000_000) { n in
        var last = Date.distantPast
        let elapsed = timed(n) { last = Date() }
        blackHole(last)
        return elapsed
    }
}
