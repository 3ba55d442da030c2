// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import ChaosControl
import ChaosKit
import Foundation
import HTTPTypes
import Hummingbird

/// `/v1/time` and `/v1/time/advance` for a program on virtual time (`Chaos.virtualClock`,
/// which ChaosHooks registers): the same answers as a `chaos run` child's endpoint, so that
/// `chaos ctl advance PID` and the page step either.
extension ChaosConsole {
    /// The advance under way in this process: virtual time is process-wide, so one is shared
    /// by every endpoint of the process. `Locked` guards it.
    private static let advancing = Locked<TimeAdvance?>(nil)

    /// The most steps an advance takes unless `?steps=N` says otherwise (as in the C endpoint).
    static let defaultAdvanceSteps = 1_000_000

    func time(_ request: Request, advance: Bool) async -> Response {
        let method = request.method
        guard advance else { return method == .get ? json(Self.virtualTime()) : notAllowed("GET") }
        switch method {
        case .post: return await advanceTime(request)
        case .delete: return await stopAdvance()
        default: return notAllowed("POST, DELETE")
        }
    }

    /// What `/v1/time` answers now.
    static func virtualTime(steps: Int? = nil, stopped: Bool? = nil) -> ControlAPI.VirtualTime {
        guard let reading = Chaos.virtualClock?.reading() else {
            return ControlAPI.VirtualTime(running: false, steps: steps, stopped: stopped)
        }
        return ControlAPI.VirtualTime(
            running: true, now: Self.instant(reading.nanosecondsSince1970),
            nanosecondsSince1970: reading.nanosecondsSince1970, offsetNanoseconds: reading.offsetNanoseconds,
            pending: reading.pending, steps: steps, advance: advanceProgress(reading), stopped: stopped)
    }

    /// How far the advance under way has got, for `/v1/status` and `/v1/time`.
    static func advanceProgress(_ reading: VirtualClockReading? = Chaos.virtualClock?.reading()) -> ControlAPI
        .AdvanceProgress?
    {
        guard let reading, let advance = advancing.withLock({ $0 }) else { return nil }
        return ControlAPI.AdvanceProgress(
            steps: Int(clamping: reading.stepsTaken &- advance.stepsBefore),
            remainingNanoseconds: max(0, advance.targetSince1970 &- reading.nanosecondsSince1970))
    }

    private func advanceTime(_ request: Request) async -> Response {
        let by = request.uri.queryParameters["by"].map(String.init) ?? ""
        let nanoseconds: Int64
        do throws(ChaosError) {
            guard !by.isEmpty else { throw ChaosError(.invalidProvider, "no duration") }
            nanoseconds = Self.saturatingNanoseconds(try DurationText.duration(by))
        } catch {
            return failure(
                .badRequest, "badRequest", subject: "by=\(InputExcerpt.of(by))",
                "give how far to advance as ?by=DURATION, e.g. 1h, 1h30m, 30s or 250ms (forward only)")
        }
        let maxSteps: Int
        if let text = request.uri.queryParameters["steps"] {
            guard text.count <= 18, let number = Int(text), number > 0 else {
                return failure(
                    .badRequest, "badRequest", subject: "steps=\(InputExcerpt.of(String(text)))",
                    "give the most steps the advance may take as ?steps=N, a positive whole number")
            }
            maxSteps = number
        } else {
            maxSteps = Self.defaultAdvanceSteps
        }
        guard let control = Chaos.virtualClock, let reading = control.reading() else { return Self.notRunning() }
        // A second advance stops the one under way, as in a `chaos run` child.
        let advance = TimeAdvance(
            targetSince1970: reading.nanosecondsSince1970.addingReportingOverflow(nanoseconds).overflow
                ? .max : reading.nanosecondsSince1970 + nanoseconds,
            stepsBefore: reading.stepsTaken)
        let before = Self.advancing.withLock { current -> TimeAdvance? in
            defer { current = advance }
            return current
        }
        before?.stop()
        Self.logger.info("chaos control: advancing virtual time", metadata: ["by": "\(by)"])
        let outcome = await Self.onThread { () -> Result<VirtualClockAdvance, ChaosError> in
            if let before { before.waitUntilFinished() }
            return Result { () throws(ChaosError) in
                try control.advance(byNanoseconds: nanoseconds, maxSteps: maxSteps) { advance.shouldStop }
            }
        }
        Self.advancing.withLock { current in if current === advance { current = nil } }
        advance.finish()
        switch outcome {
        case .failure(let error) where error.kind == .notApplied:
            return Self.notRunning()
        case .failure(let error):
            return failure(error)
        case .success(let done) where !done.reachedTarget:
            let now = Chaos.virtualClock?.reading().map { Self.instant($0.nanosecondsSince1970) } ?? "?"
            return advance.shouldStop
                ? failure(
                    .conflict, "advanceStopped", subject: "virtual time",
                    "the advance was stopped after \(done.steps) steps, before its target; virtual time stays at \(now)"
                )
                : failure(
                    .conflict, "stepLimit", subject: "virtual time",
                    "the advance reached its limit of \(done.steps) steps before its target; virtual time stays at \(now); advance again, or allow more steps (chaos ctl advance --max-steps)"
                )
        case .success(let done):
            return json(Self.virtualTime(steps: done.steps))
        }
    }

    /// `DELETE /v1/time/advance`: stops the advance under way and answers once it has stopped.
    private func stopAdvance() async -> Response {
        guard let current = Self.advancing.withLock({ $0 }) else { return json(Self.virtualTime(stopped: false)) }
        current.stop()
        await Self.onThread { current.waitUntilFinished() }
        return json(Self.virtualTime(stopped: true))
    }

    private static func notRunning() -> Response {
        errorResponse(
            .conflict, "notRunning", subject: "virtual time",
            "this process does not run on virtual time; start it in the program with VirtualTime.start() (ChaosHooks), or apply the system.clock item virtual (chaos ctl apply)"
        )
    }

    /// `2030-01-01T00:01:00.000Z`, as the C endpoint writes it.
    static func instant(_ nanosecondsSince1970: Int64) -> String {
        let (seconds, rest) = nanosecondsSince1970.quotientAndRemainder(dividingBy: 1_000_000_000)
        let whole = rest < 0 ? seconds - 1 : seconds
        let milliseconds = (rest < 0 ? rest + 1_000_000_000 : rest) / 1_000_000
        let text = ISO8601Date.format(Date(timeIntervalSince1970: Double(whole)))
        let digits = String(milliseconds)
        return text.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    private static func saturatingNanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (sum, over) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return over ? .max : sum
    }

    /// Runs `body` on a thread of its own: an advance blocks until what it wakes has run,
    /// and that may need the concurrency pool.
    private static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.startWithoutSignals { continuation.resume(returning: body()) }
        }
    }
}

/// One advance of virtual time through the endpoint: its stop flag, and its end.
final class TimeAdvance: Sendable {
    let targetSince1970: Int64
    let stepsBefore: UInt64
    private let state = Locked((stop: false, finished: false))
    private let finished = DispatchSemaphore(value: 0)

    init(targetSince1970: Int64, stepsBefore: UInt64) {
        self.targetSince1970 = targetSince1970
        self.stepsBefore = stepsBefore
    }

    var shouldStop: Bool { state.withLock { $0.stop } }

    func stop() { state.withLock { $0.stop = true } }

    func finish() {
        state.withLock { $0.finished = true }
        finished.signal()
    }

    /// Blocks the calling thread until ``finish()`` (every waiter passes).
    func waitUntilFinished() {
        guard !state.withLock({ $0.finished }) else { return }
        finished.wait()
        finished.signal()
    }
}
#endif
