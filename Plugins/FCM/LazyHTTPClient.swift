import AsyncHTTPClient
import Synchronization

/// An HTTP client created on first use, so that adapters built only to validate a configuration (`hub validate`,
/// `hub token`) never open one and need no shutdown.
final class LazyHTTPClient: Sendable {
    private let configuration: HTTPClient.Configuration
    private let state = Mutex<HTTPClient?>(nil)

    init(configuration: HTTPClient.Configuration) {
        self.configuration = configuration
    }

    /// The client, created if needed.
    var client: HTTPClient {
        state.withLock { client in
            if let client { return client }
            let created = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            client = created
            return created
        }
    }

    /// Shuts the client down if one was created.
    func shutdown() async throws {
        let client = state.withLock { client -> HTTPClient? in
            defer { client = nil }
            return client
        }
        try await client?.shutdown()
    }
}
