import NIOCore
import NIOPosix

/// The event loops of the connections to push platforms, apart from those that serve the hub's API.
///
/// A large fan-out keeps its platform connections busy with HTTP/2 framing on every core. On the event loops the
/// API uses, an installation write or a send would wait behind that work for as long as a read of answers takes; on
/// loops of their own, the kernel shares the cores between the API's threads and the fan-out's.
///
/// The threads keep the process's scheduling priority. A lower one (a higher niceness) was measured: it shortened
/// API writes during a large fan-out, but any busy thread of the machine (another process, a database) could then
/// hold a platform connection back for seconds, long enough for a token request to time out.
///
/// Adapters connect through ``shared``; it lives as long as the process, like NIO's own singleton group.
public enum PlatformEventLoops {
    /// One event loop per core, for every adapter of the process.
    public static let shared = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
}
