import Foundation
import TestHelpers
import Testing

/// A program computes absolute deadlines from its clock: under a faked clock each timed wait
/// must last what the program asked for, in the faked clock's time (issue #33). libfaketime's
/// own suite checks the same; an untranslated deadline hung for ten days under +10d and
/// returned at once under -10d.
@Suite struct DeadlineTests {
    /// Waits 300 ms of its clock in a condition variable, a semaphore and a mutex, each
    /// deadline taken from CLOCK_REALTIME, and prints what each returned and how long it took
    /// by the real monotonic clock (the profiles leave monotonic clocks alone).
    static let waiter = """
        #include <errno.h>
        #include <pthread.h>
        #include <semaphore.h>
        #include <stdio.h>
        #include <time.h>
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
            return 0;
        }
        """

    @Test(
        .enabled(if: ReachTests.which("cc") != nil && ReachTests.which("timeout") != nil, "no cc or timeout"),
        arguments: [
            #""item": "offset", "parameters": {"by": "+10d"}"#, #""item": "offset", "parameters": {"by": "-10d"}"#,
            #""item": "frozen", "parameters": {"date": "2001-01-01T00:00:00Z"}"#,
            #""item": "speed", "parameters": {"factor": 0.5}"#,
        ])
    func aTimedWaitLastsWhatTheProgramAskedForUnderAFakedClock(provider: String) throws {
        let workspace = try ReachTests.Workspace()
        defer { workspace.remove() }
        let program = try #require(try workspace.compile("waiter", Self.waiter, flags: ["-pthread"]))
        let profile = workspace.folder + "/clock.json"
        try #"{"entries": [{"point": "system.clock", "provider": {\#(provider)}}]}"#
            .write(toFile: profile, atomically: true, encoding: .utf8)
        // A liveness bound: an untranslated deadline 10 days away would hang here.
        let outcome = try ChaosToolTests.run(
            "/usr/bin/env",
            [
                "timeout", "60", ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path, "run", "--quiet",
                "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--", program,
            ])
        #expect(outcome.status == 0, "\(provider): \(outcome)")
        // Under speed 0.5 the faked 300 ms take 600 ms of real time.
        let least = provider.contains("speed") ? 0.5 : 0.25
        for line in outcome.output.split(separator: "\n") {
            let fields = line.split(separator: " ")
            #expect(fields.count == 3 && fields[1] == "timedout", "\(provider): \(line)")
            let took = fields.count == 3 ? Double(fields[2]) ?? 0 : 0
            #expect(took >= least, "\(provider): \(line) returned before its deadline")
        }
        #expect(outcome.output.split(separator: "\n").count == 3, "\(provider): \(outcome)")
    }
}
