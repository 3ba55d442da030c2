import CRawFFIFloor
import Foundation

/// Keeps a value alive so the optimizer cannot delete the work that made it.
@inline(never) func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// One measured figure: `run(iterations)` does the work `iterations` times and returns the
/// elapsed nanoseconds; the figure is nanoseconds per iteration (or a rate, see `unit`).
struct Metric {
    enum Unit { case nanoseconds, microseconds, milliseconds, perSecond }

    let name: String
    let unit: Unit
    let iterations: Int
    let run: (Int) -> UInt64
}

/// A group of metrics measured together, interleaved rep by rep so machine noise hits all alike.
struct Group {
    let name: String
    let metrics: [Metric]
    /// Objects the metrics need alive while they run (hooks, closures).
    var keepAlive: [AnyObject] = []
    /// At least this many repetitions whatever `--repetitions` says (whole-process figures).
    var minimumRepetitions = 0
}

/// The real monotonic time: read with the system call, because some groups hook the
/// clock or run the process on virtual time (where DispatchTime stands still).
func now() -> UInt64 {
    chaos_bench_real_monotonic_ns()
}

/// Times `body` run `iterations` times.
@inline(__always) func timed(_ iterations: Int, _ body: () -> Void) -> UInt64 {
    let start = now()
    for _ in 0..<iterations { body() }
    return now() - start
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Runs every metric of `group` `repetitions` times, interleaved, and returns the medians.
func measure(_ group: Group, repetitions: Int) -> [(String, Double)] {
    var samples: [String: [Double]] = [:]
    for metric in group.metrics { _ = metric.run(max(1, metric.iterations / 10)) }  // warm up
    for _ in 0..<max(repetitions, group.minimumRepetitions) {
        for metric in group.metrics {
            let elapsed = Double(metric.run(metric.iterations))
            let perIteration = elapsed / Double(metric.iterations)
            let value: Double =
                switch metric.unit {
                case .nanoseconds: perIteration
                case .microseconds: perIteration / 1_000
                case .milliseconds: perIteration / 1_000_000
                case .perSecond: 1e9 / perIteration
                }
            samples[metric.name, default: []].append(value)
        }
    }
    return group.metrics.map { ($0.name, median(samples[$0.name]!)) }
}
