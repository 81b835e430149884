import Hummingbird
import Synchronization
import Testing

/// An HTTP server on a free loopback port for the time of a test's body: the receivers of webhooks and of exported
/// traces.
enum LoopbackServer {
    /// Serves `router` on `127.0.0.1` and a free port, runs `body` with that port, and stops the server when `body`
    /// returns or throws.
    static func run<T: Sendable>(
        _ router: Router<BasicRequestContext>, _ body: @Sendable (Int) async throws -> T
    ) async throws -> T {
        let port = Mutex<Int?>(nil)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } })
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await app.runService()
                return nil
            }
            var bound: Int?
            for _ in 0..<200 where bound == nil {
                bound = port.withLock { $0 }
                if bound == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            do {
                let result = try await body(try #require(bound, "the loopback server did not start"))
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }
}
