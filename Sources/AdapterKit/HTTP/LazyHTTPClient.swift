import AsyncHTTPClient
import NIOCore
import NIOSSL
import Synchronization

/// An adapter's HTTP clients, created on first use and shut down once.
///
/// Adapters built only to check a configuration (`hub validate`, `hub token`) never open a client and need no
/// shutdown. With several clients, requests are spread over them round robin: each AsyncHTTPClient keeps one HTTP/2
/// connection per host on one event loop, so several clients use several loops (cores). After ``shutdown()``,
/// ``client()`` throws, so a late delivery fails as unreachable instead of opening a client nobody closes.
///
/// ```swift
/// let http = LazyHTTPClient(
///     configuration: try LazyHTTPClient.configuration(trustingPEM: caPEM, connectTimeout: .seconds(10)))
/// // in deliver(_:):
/// let response = try await http.client().execute(request, deadline: .now() + .seconds(30))
/// ```
public final class LazyHTTPClient: Sendable {
    private enum State {
        case idle
        case running([HTTPClient])
        case shutDown
    }

    private let configuration: HTTPClient.Configuration
    private let count: Int
    private let state = Mutex(State.idle)
    private let next = Atomic<Int>(0)

    /// Creates the holder; no client exists until ``client()`` is first called.
    public init(configuration: HTTPClient.Configuration, count: Int = 1) {
        self.configuration = configuration
        self.count = max(1, count)
    }

    /// A client, created if needed (round robin over `count` clients). Throws after ``shutdown()``.
    public func client() throws -> HTTPClient {
        let clients = try state.withLock { state -> [HTTPClient] in
            switch state {
            case .running(let clients):
                return clients
            case .shutDown:
                throw HTTPClientError.alreadyShutdown
            case .idle:
                let clients = (0..<count).map { _ in
                    HTTPClient(eventLoopGroup: PlatformEventLoops.shared, configuration: configuration)
                }
                state = .running(clients)
                return clients
            }
        }
        if clients.count == 1 { return clients[0] }
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return clients[index % clients.count]
    }

    /// Shuts the clients down, if any were created. Later calls of ``client()`` throw.
    public func shutdown() async throws {
        let clients = state.withLock { state -> [HTTPClient] in
            defer { state = .shutDown }
            if case .running(let clients) = state { return clients }
            return []
        }
        for client in clients { try await client.shutdown() }
    }

    /// A client configuration with the system's trust roots plus `trustingPEM` (CA certificates in PEM, for an
    /// emulator or a private service), a connect deadline, and at most `maximumConnectionsPerHost` HTTP/1.1
    /// connections per host. Throws ``HubError/Code/invalidConfiguration`` when the PEM holds no certificate.
    public static func configuration(
        trustingPEM pem: String?, connectTimeout: Duration = .seconds(10), maximumConnectionsPerHost: Int = 16,
        idleTimeout: Duration = .seconds(60), httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic
    ) throws(HubError) -> HTTPClient.Configuration {
        configuration(
            trusting: try pem.map { pem throws(HubError) in try PEM.certificates(pem) } ?? [],
            connectTimeout: connectTimeout, maximumConnectionsPerHost: maximumConnectionsPerHost,
            idleTimeout: idleTimeout, httpVersion: httpVersion)
    }

    /// A client configuration with the system's trust roots plus `certificates`, a connect deadline, and at most
    /// `maximumConnectionsPerHost` HTTP/1.1 connections per host.
    public static func configuration(
        trusting certificates: [NIOSSLCertificate], connectTimeout: Duration = .seconds(10),
        maximumConnectionsPerHost: Int = 16, idleTimeout: Duration = .seconds(60),
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic
    ) -> HTTPClient.Configuration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if !certificates.isEmpty { tls.additionalTrustRoots = [.certificates(certificates)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            timeout: HTTPClient.Configuration.Timeout(connect: connectTimeout.timeAmount),
            connectionPool: HTTPClient.Configuration.ConnectionPool(
                idleTimeout: idleTimeout.timeAmount,
                concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, maximumConnectionsPerHost)))
        configuration.httpVersion = httpVersion
        return configuration
    }
}
