import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import NotificationHub
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Builds the HTTP server of the API from the `server:` settings: the address, TLS, and the connection limits and
/// deadlines of ``ConnectionGuard``. `hub serve` and the live tests use the same server.
public enum HubApplication {
    /// The connection guard's settings from the server configuration.
    public static func connectionSettings(_ server: NotificationHub.ServerConfiguration) -> ConnectionGuard.Settings {
        ConnectionGuard.Settings(
            maximumConnections: server.maximumConnections,
            requestHeaderTimeout: .nanoseconds(Int64(server.requestHeaderTimeoutSeconds * 1e9)),
            requestBodyTimeout: .nanoseconds(Int64(server.requestBodyTimeoutSeconds * 1e9)),
            idleTimeout: .nanoseconds(Int64(server.idleTimeoutSeconds * 1e9)))
    }

    /// Makes the application service.
    public static func make(
        api: HubAPI, server: NotificationHub.ServerConfiguration, logger: Logger,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) throws -> any Service {
        let connections = ConnectionGuard(settings: connectionSettings(server), logger: logger)
        let http1 = HTTPServerBuilder.http1(
            configuration: HTTP1Channel.Configuration(additionalChannelHandlers: [connections.makeHandler()]))
        let configuration = ApplicationConfiguration(
            address: .hostname(server.host, port: server.port), serverName: "NotificationHub", backlog: 1024)
        if let tls = server.tls {
            api.directory.operations.scheme = "https"
            let tlsConfiguration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificateChain).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.privateKey, format: .pem)))
            return Application(
                router: api.makeRouter(), server: try .tls(http1, tlsConfiguration: tlsConfiguration),
                configuration: configuration, onServerRunning: onServerRunning, logger: logger)
        }
        return Application(
            router: api.makeRouter(), server: http1, configuration: configuration, onServerRunning: onServerRunning,
            logger: logger)
    }

    /// Raises the soft limit on open files to the hard limit, as servers do: connections, every hub's database files
    /// and every adapter's pooled connections count against it, and a soft limit of 1,024 (many systems' default)
    /// would make accepts fail long before `maximumConnections`. Warns when even the hard limit is below `wanted`.
    static func raiseFileDescriptorLimit(toAtLeast wanted: Int, logger: Logger) {
        #if canImport(Glibc)
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        if limit.rlim_cur < rlim_t(wanted) {
            logger.warning(
                "the open-file limit is below server.maximumConnections; lower maximumConnections or raise the limit",
                metadata: ["limit": "\(limit.rlim_cur)", "wanted": "\(wanted)"])
        }
        #endif
    }
}
