import AsyncHTTPClient
import Synchronization

/// HTTP clients created on first use, so that adapters built only to validate a configuration (`hub validate`,
/// `hub token`) never open one and need no shutdown. With several clients, requests are spread over them round
/// robin: each AsyncHTTPClient keeps one HTTP/2 connection per host on one event loop, so several clients use
/// several loops (cores).
final class LazyHTTPClient: Sendable {
    private let configuration: HTTPClient.Configuration
    private let count: Int
    private let state = Mutex<[HTTPClient]>([])
    private let next = Atomic<Int>(0)

    init(configuration: HTTPClient.Configuration, count: Int = 1) {
        self.configuration = configuration
        self.count = max(1, count)
    }

    /// A client, created if needed (round robin over `count` clients).
    var client: HTTPClient {
        let clients = state.withLock { clients in
            if clients.isEmpty {
                clients = (0..<count).map { _ in HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration) }
            }
            return clients
        }
        if clients.count == 1 { return clients[0] }
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return clients[index % clients.count]
    }

    /// Shuts the clients down, if any were created.
    func shutdown() async throws {
        let clients = state.withLock { clients -> [HTTPClient] in
            defer { clients = [] }
            return clients
        }
        for client in clients { try await client.shutdown() }
    }
}
