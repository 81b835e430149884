import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The event loops of the connections to push platforms, apart from those that serve the hub's API.
///
/// A large fan-out keeps its platform connections busy with HTTP/2 framing on every core. On the event loops the
/// API uses, an installation write or a send would wait behind that work for as long as a read of answers takes. On
/// their own threads, at a lower scheduling priority (a niceness of ``niceness`` on Linux), the kernel runs a
/// waking API thread first and the fan-out gets every cycle the API leaves.
///
/// Adapters connect through ``shared``; it lives as long as the process, like NIO's own singleton group.
public enum PlatformEventLoops {
    /// How much lower the platform threads' priority is than the rest of the process (Linux `setpriority`).
    public static let niceness: Int32 = 5

    /// One event loop per core, for every adapter of the process.
    public static let shared: MultiThreadedEventLoopGroup = {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        #if os(Linux)
        for loop in group.makeIterator() {
            // Each event loop lowers the priority of its own thread before it runs anything else queued on it; a
            // failure leaves it at the default.
            loop.execute { lowerCurrentThreadPriority(by: niceness) }
        }
        #endif
        return group
    }()

    #if os(Linux)
    /// Adds `amount` to the calling thread's niceness. On Linux the niceness belongs to a thread, and `who` 0 names
    /// the calling one.
    static func lowerCurrentThreadPriority(by amount: Int32) {
        errno = 0
        let current = currentThreadNiceness()
        guard errno == 0 else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, min(19, current + amount))
    }

    /// The calling thread's niceness.
    public static func currentThreadNiceness() -> Int32 {
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    }
    #endif
}
