import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Thread {
    /// Starts `body` on a new thread of ChaosKit's that takes none of the program's
    /// signals. A process-directed signal (`kill`, a POSIX timer) lands on any thread that
    /// does not block it: on one of ours it would run the program's handler past the masks
    /// the program's own threads keep. The new thread inherits the mask it is started
    /// with, so every signal is blocked around its start, and it never runs unmasked.
    package static func startWithoutSignals(_ body: @escaping @Sendable () -> Void) {
        var all = sigset_t()
        var previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        Thread { body() }.start()
    }
}
