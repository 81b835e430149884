import AdapterKit
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A strict local Huawei Push Kit: the OAuth 2.0 token endpoint (`POST /oauth2/v3/token`, client-credentials
/// grant) and the server API's send endpoint (`POST /v1/{appId}/messages:send`) over TLS with HTTP/2 (ALPN) and
/// HTTP/1.1.
///
/// Rules and answers follow Huawei's documentation: "Push Kit server API: Sending Messages" and its response-code
/// table (developer.huawei.com, HMSCore-References `https-send-api`, and the HarmonyOS push "API response" page),
/// and the Account Kit "Client Credentials" page for the token endpoint. Checked:
/// - token endpoint: `application/x-www-form-urlencoded`, `grant_type=client_credentials`, `client_id` equal to the
///   app id and `client_secret` to its secret; answers `{"access_token", "expires_in", "token_type": "Bearer"}`, or
///   400 `{"error", "sub_error", "error_description"}`;
/// - send: a bearer token it issued for this app (`80200001` otherwise, with HTTP 401), not expired (`80200003`,
///   HTTP 401); `Content-Type: application/json`; a JSON body whose `message` holds `token`, an array of 1 to 1,000
///   tokens (`80300010`), and `data` as a string or `notification` / `android.notification` (`80100003`, HTTP 400);
///   a body of at most 4,096 bytes without its tokens (`80300008`);
/// - answers: `80000000` success; `80100000` when some tokens are illegal, listed in `msg` as JSON text
///   `{"success", "failure", "illegal_tokens": [...]}`; `80300007` when all are; `80600003` with HTTP 503 under
///   traffic control (the throttle fault), `81000001` with HTTP 500 (the server-error fault).
///
/// Where Huawei's pages are thin (the numeric `error`/`sub_error` of a refused token request, the HTTP status of
/// `80300007`, `80300008` and `80300010`), the emulator answers as `docs/adapters/HMS.md` says and the adapter decides
/// by the result code, never by those. Tokens are illegal when marked through the admin API or when they do not
/// look like push tokens (32 to 512 characters of letters, digits and `-_.:+/=`).
public final class HMSEmulator: PlatformEmulator, Sendable {
    /// The emulator's settings.
    public struct Configuration: Sendable {
        /// Address to bind.
        public var host: String
        /// Port of the token and send endpoints (0 picks a free port).
        public var port: Int
        /// Port of the admin API (0 picks a free port).
        public var adminPort: Int
        /// The app id whose messages are accepted (and the OAuth `client_id`).
        public var appID: String
        /// The app's secret (the OAuth `client_secret`).
        public var clientSecret: String
        /// Lifetime of issued access tokens (shorten it to exercise renewal).
        public var accessTokenLifetime: Duration

        /// Creates settings.
        public init(
            host: String = "127.0.0.1", port: Int = 0, adminPort: Int = 0, appID: String, clientSecret: String,
            accessTokenLifetime: Duration = .seconds(3600)
        ) {
            self.host = host
            self.port = port
            self.adminPort = adminPort
            self.appID = appID
            self.clientSecret = clientSecret
            self.accessTokenLifetime = accessTokenLifetime
        }
    }

    /// One message the emulator accepted for one token.
    public struct Received: Sendable, Hashable {
        /// The token.
        public var token: String
        /// The `message` object without `token`, as JSON text.
        public var message: String
    }

    public let name = "hms"
    /// The settings.
    public let configuration: Configuration
    /// Accepted messages (one entry per token), violations and injected faults.
    public let recorder = EmulatorRecorder<Received>()
    let tls: EmulatorTLS
    let logger: Logger
    let state = Mutex(HMSEmulatorState())
    private let listeners: EmulatorListeners

    /// Creates an emulator (not started).
    public init(configuration: Configuration, tls: EmulatorTLS, logger: Logger) {
        self.configuration = configuration
        self.tls = tls
        self.logger = logger
        self.listeners = EmulatorListeners(
            label: "HMS emulator", host: configuration.host, servicePort: configuration.port,
            adminPort: configuration.adminPort, logger: logger)
    }

    /// Serves until graceful shutdown or cancellation.
    public func run() async throws {
        try await listeners.run(tls: tls, service: { await self.serve($0) }, admin: { await self.serveAdmin($0) })
    }

    /// The bound ports, once both servers listen.
    public func ports() async -> EmulatorPorts { await listeners.ports() }

    /// The token endpoint's URL for a bound port.
    public func tokenEndpoint(port: Int) -> String { "https://\(configuration.host):\(port)/oauth2/v3/token" }
    /// The server API's base URL for a bound port.
    public func endpoint(port: Int) -> String { "https://\(configuration.host):\(port)" }

    // MARK: Swift admin API

    /// Makes these tokens illegal (an uninstalled app, a token of another app).
    public func markIllegal(_ tokens: [String]) {
        state.withLock { state in state.illegalTokens.formUnion(tokens) }
    }

    /// Makes every access token issued so far expired (the next send with one gets `80200003`).
    public func expireAccessTokens() {
        state.withLock { state in
            for key in state.accessTokens.keys { state.accessTokens[key] = .now - .seconds(1) }
        }
    }

    /// Token requests answered with a token.
    public var tokenRequestCount: Int { state.withLock { $0.tokenRequests } }
    /// Send requests accepted (each may carry up to 1,000 tokens).
    public var sendRequestCount: Int { state.withLock { $0.sendRequests } }
    /// The token counts of the accepted send requests, in order.
    public var batchSizes: [Int] { state.withLock { $0.batchSizes } }

    /// Sets the injected faults.
    public func setFaults(_ faults: FaultInjection) { recorder.faults = faults }

    /// Clears records, faults and illegal tokens (issued access tokens stay valid).
    public func reset() {
        recorder.reset()
        recorder.faults = .none
        state.withLock { state in
            state.illegalTokens.removeAll()
            state.tokenRequests = 0
            state.sendRequests = 0
            state.batchSizes.removeAll()
        }
    }
}

/// Issued access tokens, illegal tokens and counters of an ``HMSEmulator``.
struct HMSEmulatorState {
    var accessTokens: [String: ContinuousClock.Instant] = [:]
    var illegalTokens = Set<String>()
    var tokenRequests = 0
    var sendRequests = 0
    var batchSizes: [Int] = []
}
