import Foundation
import Synchronization
import Testing

@testable import ChaosKit

/// Threads ChaosKit starts inside a program take none of its signals (issue #33): each
/// runs with every signal it can block blocked, from its first instruction, whatever mask
/// the thread that started it had.
@Suite struct SignalFreeThreadTests {
    @Test func aThreadOfOursStartsWithEverySignalBlocked() async throws {
        // Started from a thread that blocks nothing, as a program's main thread may.
        let blocked = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            Thread {
                var none = sigset_t()
                sigemptyset(&none)
                pthread_sigmask(SIG_SETMASK, &none, nil)
                Thread.startWithoutSignals {
                    let status = (try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)) ?? ""
                    let line = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") } ?? ""
                    continuation.resume(returning: String(line.dropFirst(7)).trimmingCharacters(in: .whitespaces))
                }
            }.start()
        }
        // Every signal but SIGKILL and SIGSTOP (bits 8 and 18), which no thread can block.
        let mask = UInt64(blocked, radix: 16) ?? 0
        let blockable = UInt64.max & ~(1 << 8) & ~(1 << 18)
        #expect(mask & 0x7fff_ffff == blockable & 0x7fff_ffff, "SigBlk \(blocked)")
    }
}
