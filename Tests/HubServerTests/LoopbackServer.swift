import HubTestSupport
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// An HTTP server on a free loopback port for the time of a test's body: the receivers of webhooks and of exported
/// traces.
enum LoopbackServer {
    /// Serves `router` on `127.0.0.1` and a free port, runs `body` with that port, and stops the server when `body`
    /// returns or throws.
    ///
    /// The server is stopped by a graceful shutdown, never by cancelling it: the hub may still be connecting (a
    /// webhook retry, a span export) when the body ends, and a connection accepted by a cancelled server is never
    /// served nor closed.
    static func run<T: Sendable>(
        _ router: Router<BasicRequestContext>, _ body: @Sendable (Int) async throws -> T
    ) async throws -> T {
        let port = Mutex<Int?>(nil)
        let logger = Logger.forTest("loopback")
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } }, logger: logger)
        let services = ServiceGroup(services: [app], logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await services.run()
                return nil
            }
            let result: Result<T, any Error>
            do {
                var bound: Int?
                for _ in 0..<200 where bound == nil {
                    bound = port.withLock { $0 }
                    if bound == nil { try await Task.sleep(for: .milliseconds(10)) }
                }
                result = .success(try await body(try #require(bound, "the loopback server did not start")))
            } catch {
                result = .failure(error)
            }
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return try result.get()
        }
    }
}
