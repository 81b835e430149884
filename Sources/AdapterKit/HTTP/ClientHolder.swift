import AsyncHTTPClient
import NIOCore
import NIOSSL
import Synchronization

/// Creates the HTTP client on first use and shuts it down once.
final class ClientHolder: Sendable {
    private enum State {
        case idle
        case running(HTTPClient)
        case shutDown
    }

    private let state = Mutex(State.idle)
    private let configuration: WNSConfiguration

    init(configuration: WNSConfiguration) {
        self.configuration = configuration
    }

    func get() throws -> HTTPClient {
        try state.withLock { state in
            switch state {
            case .running(let client):
                return client
            case .shutDown:
                throw HTTPClientError.alreadyShutdown
            case .idle:
                var tls = TLSConfiguration.makeClientConfiguration()
                if !configuration.additionalTrustRoots.isEmpty {
                    tls.additionalTrustRoots = [.certificates(configuration.additionalTrustRoots)]
                }
                var httpConfiguration = HTTPClient.Configuration(
                    tlsConfiguration: tls,
                    timeout: HTTPClient.Configuration.Timeout(
                        connect: min(.seconds(10), configuration.requestTimeout).timeAmount),
                    connectionPool: HTTPClient.Configuration.ConnectionPool(
                        idleTimeout: .seconds(60),
                        concurrentHTTP1ConnectionsPerHostSoftLimit: configuration.maximumConnections))
                httpConfiguration.httpVersion = .http1Only
                let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
                state = .running(client)
                return client
            }
        }
    }

    func shutdown() async throws {
        let client = state.withLock { state -> HTTPClient? in
            defer { state = .shutDown }
            if case .running(let client) = state { return client }
            return nil
        }
        try await client?.shutdown()
    }
}
