import NIOCore
import NIOPosix

#if os(Linux)
import Glibc
#endif

/// The event loops of the connections to push platforms, apart from those that serve the hub's API.
///
/// A large fan-out keeps its platform connections busy with HTTP/2 framing on every core. On the event loops the
/// API uses, an installation write or a send would wait behind that work for as long as a read of answers takes; on
/// loops of their own, the kernel shares the cores between the API's threads and the fan-out's.
///
/// On Linux the threads are scheduled as batch work (`SCHED_BATCH`): they keep the process's priority and their
/// share of the cores, but a thread of the API (or of the database) that wakes up is not made to wait behind them
/// for the rest of their time slice. A lower priority (a higher niceness) was measured too: it shortened API writes
/// during a large fan-out as well, but any busy thread of the machine (another process, a database) could then hold
/// a platform connection back for seconds, long enough for a token request to time out.
///
/// Adapters connect through ``shared``; it lives as long as the process, like NIO's own singleton group.
public enum PlatformEventLoops {
    /// One event loop per core, for every adapter of the process.
    public static let shared: MultiThreadedEventLoopGroup = {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        for loop in group.makeIterator() { loop.execute { scheduleAsBatchWork() } }
        return group
    }()

    /// Whether the calling thread is scheduled as batch work (always `false` where there is no such policy).
    static var isBatchScheduled: Bool {
        #if os(Linux)
        sched_getscheduler(0) == batchPolicy
        #else
        false
        #endif
    }

    #if os(Linux)
    /// Linux's `SCHED_BATCH` (`<sched.h>` declares it for GNU sources only).
    static let batchPolicy: Int32 = 3
    #endif

    /// Moves the calling thread to batch scheduling where the system has it; nothing elsewhere, or when refused.
    static func scheduleAsBatchWork() {
        #if os(Linux)
        var parameters = sched_param()
        _ = sched_setscheduler(0, batchPolicy, &parameters)
        #endif
    }
}
