import Foundation
import TestHelpers
import Testing

/// A program computes absolute deadlines from its clock: under a faked clock each timed wait
/// must last what the program asked for, in the faked clock's time (issue #33). libfaketime's
/// own suite checks the same; an untranslated deadline hung for ten days under +10d and
/// returned at once under -10d.
@Suite struct DeadlineTests {
    /// Waits 300 ms of its clock in a condition variable, a semaphore, a mutex, a timerfd
    /// and a POSIX timer, each deadline taken from CLOCK_REALTIME, and prints what each
    /// returned and how long it took by the real monotonic clock (the profiles leave
    /// monotonic clocks alone).
    static let waiter = """
        #include <errno.h>
        #include <pthread.h>
        #include <semaphore.h>
        #include <signal.h>
        #include <stdint.h>
        #include <stdio.h>
        #include <sys/timerfd.h>
        #include <time.h>
        #include <unistd.h>
        static double monotonic(void) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            return now.tv_sec + now.tv_nsec / 1e9;
        }
        static struct timespec soon(void) {
            struct timespec at;
            clock_gettime(CLOCK_REALTIME, &at);
            at.tv_nsec += 300000000;
            if (at.tv_nsec >= 1000000000) { at.tv_sec++; at.tv_nsec -= 1000000000; }
            return at;
        }
        int main(void) {
            pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
            pthread_cond_t condition = PTHREAD_COND_INITIALIZER;
            sem_t semaphore;
            sem_init(&semaphore, 0, 0);
            struct timespec at = soon();
            double start = monotonic();
            pthread_mutex_lock(&mutex);
            int result = pthread_cond_timedwait(&condition, &mutex, &at);
            printf("cond %s %.3f\\n", result == ETIMEDOUT ? "timedout" : "other", monotonic() - start);
            at = soon();
            start = monotonic();
            result = pthread_mutex_timedlock(&mutex, &at);  // held: it times out
            printf("mutex %s %.3f\\n", result == ETIMEDOUT ? "timedout" : "other", monotonic() - start);
            pthread_mutex_unlock(&mutex);
            at = soon();
            start = monotonic();
            result = sem_timedwait(&semaphore, &at);
            printf("sem %s %.3f\\n", result == -1 && errno == ETIMEDOUT ? "timedout" : "other", monotonic() - start);
            // Kernel timers armed at an absolute instant: a timerfd, and a POSIX timer
            // whose signal is blocked and taken with sigwait.
            int fd = timerfd_create(CLOCK_REALTIME, 0);
            struct itimerspec expiry = {{0, 0}, soon()};
            start = monotonic();
            timerfd_settime(fd, TFD_TIMER_ABSTIME, &expiry, NULL);
            uint64_t expirations = 0;
            ssize_t got = read(fd, &expirations, sizeof expirations);
            printf("timerfd %s %.3f\\n", got == 8 && expirations == 1 ? "timedout" : "other", monotonic() - start);
            sigset_t usr1;
            sigemptyset(&usr1);
            sigaddset(&usr1, SIGUSR1);
            sigprocmask(SIG_BLOCK, &usr1, NULL);
            struct sigevent event = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1};
            timer_t timer;
            timer_create(CLOCK_REALTIME, &event, &timer);
            expiry.it_value = soon();
            start = monotonic();
            timer_settime(timer, TIMER_ABSTIME, &expiry, NULL);
            int taken = 0;
            sigwait(&usr1, &taken);
            printf("timer %s %.3f\\n", taken == SIGUSR1 ? "timedout" : "other", monotonic() - start);
            return 0;
        }
        """

    /// The clock entries every deadline test runs under: offsets both ways, a frozen clock,
    /// and time at half speed.
    static let fakedClocks = [
        #""item": "offset", "parameters": {"by": "+10d"}"#, #""item": "offset", "parameters": {"by": "-10d"}"#,
        #""item": "frozen", "parameters": {"date": "2001-01-01T00:00:00Z"}"#,
        #""item": "speed", "parameters": {"factor": 0.5}"#,
    ]

    /// The least real time a wait of 300 ms of the faked clock may take under `provider`:
    /// under speed 0.5 they take 600 ms of real time.
    static func leastRealSeconds(_ provider: String) -> Double {
        provider.contains("speed") ? 0.5 : 0.25
    }

    /// `source` compiled and run under `chaos run` (with `options`, e.g. a delivery) and a
    /// profile of one `system.clock` entry of `provider`, within a liveness bound of 60 s:
    /// an untranslated deadline ten days away would hang there.
    static func runUnderClock(
        _ provider: String, _ source: String, named name: String, flags: [String] = [], options: [String]
    ) throws -> ChaosToolTests.Outcome {
        let workspace = try ReachTests.Workspace()
        defer { workspace.remove() }
        let program = try #require(try workspace.compile(name, source, flags: flags))
        let profile = workspace.folder + "/clock.json"
        try #"{"entries": [{"point": "system.clock", "provider": {\#(provider)}}]}"#
            .write(toFile: profile, atomically: true, encoding: .utf8)
        return try ChaosToolTests.run(
            "/usr/bin/env",
            ["timeout", "60", ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path, "run"] + options
                + ["--profile", profile, "--", program])
    }

    @Test(
        .enabled(if: ReachTests.which("cc") != nil && ReachTests.which("timeout") != nil, "no cc or timeout"),
        arguments: fakedClocks)
    func aTimedWaitLastsWhatTheProgramAskedForUnderAFakedClock(provider: String) throws {
        let outcome = try Self.runUnderClock(
            provider, Self.waiter, named: "waiter", flags: ["-pthread"],
            options: ["--quiet", "--preload", ChaosToolTests.preloadLibrary])
        #expect(outcome.status == 0, "\(provider): \(outcome)")
        let least = Self.leastRealSeconds(provider)
        for line in outcome.output.split(separator: "\n") {
            let fields = line.split(separator: " ")
            #expect(fields.count == 3 && fields[1] == "timedout", "\(provider): \(line)")
            let took = fields.count == 3 ? Double(fields[2]) ?? 0 : 0
            #expect(took >= least, "\(provider): \(line) returned before its deadline")
        }
        #expect(outcome.output.split(separator: "\n").count == 5, "\(provider): \(outcome)")
    }

    /// Sleeps until 300 ms past what its realtime clock reads, with clock_nanosleep and
    /// TIMER_ABSTIME, and prints how long that took by the real monotonic clock.
    static let absoluteSleeper = """
        #include <stdio.h>
        #include <time.h>
        int main(void) {
            struct timespec at, start, end;
            clock_gettime(CLOCK_REALTIME, &at);
            at.tv_nsec += 300000000;
            if (at.tv_nsec >= 1000000000) { at.tv_sec++; at.tv_nsec -= 1000000000; }
            clock_gettime(CLOCK_MONOTONIC, &start);
            int result = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL);
            clock_gettime(CLOCK_MONOTONIC, &end);
            printf("sleep %s %.3f\\n", result == 0 ? "slept" : "other",
                   (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
            return 0;
        }
        """

    /// An absolute sleep waits until the faked clock reads its target, under both
    /// deliveries: they share the engine's rule (chaos_outcome_sleep). The seccomp
    /// supervisor once let it go on with the faked instant, which the kernel took for a real
    /// one: ten days under +10d, no wait at all under -10d.
    @Test(
        .enabled(if: ReachTests.which("cc") != nil && ReachTests.which("timeout") != nil, "no cc or timeout"),
        arguments: fakedClocks, ["preload", "seccomp"])
    func anAbsoluteSleepLastsWhatTheFakedClockHasLeft(provider: String, delivery: String) throws {
        let options =
            delivery == "seccomp"
            ? ["--quiet", "--delivery", "seccomp"] : ["--quiet", "--preload", ChaosToolTests.preloadLibrary]
        let outcome = try Self.runUnderClock(provider, Self.absoluteSleeper, named: "sleeper", options: options)
        #expect(outcome.status == 0, "\(provider), \(delivery): \(outcome)")
        let fields = outcome.output.split(separator: "\n").first?.split(separator: " ") ?? []
        #expect(fields.count == 3 && fields[1] == "slept", "\(provider), \(delivery): \(outcome)")
        let least = Self.leastRealSeconds(provider)
        let took = fields.count == 3 ? Double(fields[2]) ?? 0 : 0
        #expect(took >= least, "\(provider), \(delivery): returned after \(took) s, before its deadline")
    }

    /// Under the seccomp delivery the supervisor can neither wait on the program's futex or
    /// timer nor change the instant it passes: each process that waits until an instant of
    /// the faked clock, or under virtual time, is told at once that the wait keeps real
    /// time, and the report names it. (Under -10d the waits end at once: no hang to bound.)
    @Test(
        .enabled(if: ReachTests.which("cc") != nil && ReachTests.which("timeout") != nil, "no cc or timeout"),
        arguments: [
            (#""item": "offset", "parameters": {"by": "-10d"}"#, "the kernel takes the faked instant for a real one"),
            (#""item": "virtual""#, "virtual time cannot hold it under the seccomp delivery"),
        ])
    func aWaitTheSupervisorCannotTranslateIsSaid(provider: String, said: String) throws {
        let outcome = try Self.runUnderClock(
            provider, Self.waiter, named: "waiter", flags: ["-pthread"], options: ["--delivery", "seccomp"])
        #expect(outcome.status == 0, "\(provider): \(outcome)")
        #expect(outcome.output.split(separator: "\n").count == 5, "\(provider): \(outcome)")
        let warnings = outcome.errors.split(separator: "\n").filter { $0.contains("chaos run: warning: process") }
        #expect(warnings.count == 1, "said once per process: \(outcome.errors)")
        #expect(warnings.first?.contains(said) == true, "\(provider): \(outcome.errors)")
        #expect(
            outcome.errors.contains("a futex wait or kernel timer kept real time (seccomp delivery)"),
            "the report names it: \(outcome.errors)")
    }
}
