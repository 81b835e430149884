import AdapterKit
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A strict local Amazon Device Messaging: Login with Amazon's token endpoint (`POST /auth/o2/token`,
/// client-credentials grant) and ADM's send endpoint (`POST /messaging/registrations/{registrationId}/messages`) over
/// TLS with HTTP/2 (ALPN) and HTTP/1.1.
///
/// Rules and answers follow Amazon's documentation: "Request an Access Token"
/// (https://developer.amazon.com/docs/adm/request-access-token.html) and "Send a Message"
/// (https://developer.amazon.com/docs/adm/send-message.html, "Request format" and "Response format"). Checked:
/// - token endpoint: a form body with `grant_type=client_credentials`, `scope=messaging:push`, and the security
///   profile's `client_id` and `client_secret`; answers `{"access_token", "expires_in", "scope", "token_type":
///   "bearer"}`, or an OAuth error (RFC 6749 §5.2: `invalid_client` with 401, `unsupported_grant_type`,
///   `invalid_scope`, `invalid_request` with 400);
/// - send: a bearer token the emulator issued and that has not expired (401 `AccessTokenExpired` otherwise);
///   `X-Amzn-Type-Version: com.amazon.device.messaging.ADMMessage@1.0` and `X-Amzn-Accept-Type:
///   com.amazon.device.messaging.ADMSendResult@1.0` (400 `InvalidType`), `Accept` and `Content-Type`
///   `application/json`; a JSON body whose `data` is a map of strings (400 `InvalidData`) of at most 6 KB written
///   without white space, as the page counts it (413 `MessageTooLarge`); `consolidationKey` a string of at most 64
///   characters (400 `InvalidConsolidationKey`); `expiresAfter` whole seconds from 60 to 2,678,400 (400
///   `InvalidExpiration`); `md5`, when given, the checksum of the data (400 `InvalidChecksum`);
/// - the registration id: one that does not look like an ADM registration id, one marked invalid, or (with
///   ``Configuration/acceptsUnknownRegistrations`` off) one never registered through the admin API is 400
///   `InvalidRegistrationId`; one marked unregistered is 400 `Unregistered`; one marked replaced is delivered and
///   answered 200 with the new id as `registrationID`;
/// - answers: 200 `{"registrationID"}` with `X-Amzn-RequestId`, `X-Amzn-Data-md5` and `X-Amzn-Type-Version:
///   com.amazon.device.messaging.ADMSendResult@1.0`; errors `{"reason"}` with the same reason in `X-Amzn-ErrorType`;
///   the throttle fault is 429 `MaxRateExceeded` with `Retry-After`, the unavailable fault 503 `ServiceUnavailable`
///   (with `Retry-After`), the server-error fault 500 `InternalServerError`.
///
/// Where Amazon's pages are thin (the checksum's exact construction, the reason of a token ADM never issued, the
/// bodies of 500 and 503), the emulator answers as `docs/adapters/ADM.md` says.
public final class ADMEmulator: PlatformEmulator, Sendable {
    /// The emulator's settings.
    public struct Configuration: Sendable {
        /// Address to bind.
        public var host: String
        /// Port of the token and send endpoints (0 picks a free port).
        public var port: Int
        /// Port of the admin API (0 picks a free port).
        public var adminPort: Int
        /// The security profile's client id (the OAuth `client_id`).
        public var clientID: String
        /// The security profile's client secret (the OAuth `client_secret`).
        public var clientSecret: String
        /// Lifetime of issued access tokens (shorten it to exercise renewal).
        public var accessTokenLifetime: Duration
        /// Whether a well-formed registration id never registered through the admin API is delivered to. When off,
        /// only registered ids are, and others are `InvalidRegistrationId`.
        public var acceptsUnknownRegistrations: Bool

        /// Creates settings.
        public init(
            host: String = "127.0.0.1", port: Int = 0, adminPort: Int = 0, clientID: String, clientSecret: String,
            accessTokenLifetime: Duration = .seconds(3600), acceptsUnknownRegistrations: Bool = true
        ) {
            self.host = host
            self.port = port
            self.adminPort = adminPort
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.accessTokenLifetime = accessTokenLifetime
            self.acceptsUnknownRegistrations = acceptsUnknownRegistrations
        }
    }

    /// One message the emulator accepted.
    public struct Received: Sendable, Hashable {
        /// The registration id the message was sent to.
        public var registrationID: String
        /// The `data` map.
        public var data: [String: String]
        /// The `consolidationKey`, if any.
        public var consolidationKey: String?
        /// The `expiresAfter` seconds, if any.
        public var expiresAfter: Int?
    }

    public let name = "adm"
    /// The settings.
    public let configuration: Configuration
    /// Accepted messages, violations and injected faults.
    public let recorder = EmulatorRecorder<Received>()
    let tls: EmulatorTLS
    let logger: Logger
    let state = Mutex(ADMEmulatorState())
    private let listeners: EmulatorListeners

    /// Creates an emulator (not started).
    public init(configuration: Configuration, tls: EmulatorTLS, logger: Logger) {
        self.configuration = configuration
        self.tls = tls
        self.logger = logger
        self.listeners = EmulatorListeners(
            label: "ADM emulator", host: configuration.host, servicePort: configuration.port,
            adminPort: configuration.adminPort, logger: logger)
    }

    /// Serves until graceful shutdown.
    public func run() async throws {
        try await listeners.run(tls: tls, service: { await self.serve($0) }, admin: { await self.serveAdmin($0) })
    }

    /// The bound ports, once both servers listen.
    public func ports() async -> EmulatorPorts { await listeners.ports() }

    /// The token endpoint's URL for a bound port.
    public func tokenEndpoint(port: Int) -> String { "https://\(configuration.host):\(port)/auth/o2/token" }
    /// The send API's base URL for a bound port.
    public func endpoint(port: Int) -> String { "https://\(configuration.host):\(port)" }

    // MARK: Swift admin API

    /// Registers app instances: with ``Configuration/acceptsUnknownRegistrations`` off, only these are delivered to.
    public func register(_ registrationIDs: [String]) {
        state.withLock { $0.known.formUnion(registrationIDs) }
    }

    /// Makes these registration ids invalid (`InvalidRegistrationId`).
    public func markInvalid(_ registrationIDs: [String]) {
        state.withLock { $0.invalid.formUnion(registrationIDs) }
    }

    /// Makes these app instances unregistered (`Unregistered`: the app was uninstalled).
    public func markUnregistered(_ registrationIDs: [String]) {
        state.withLock { $0.unregistered.formUnion(registrationIDs) }
    }

    /// Gives an app instance a new registration id: messages to `old` are delivered and answered with `new`.
    public func replace(_ old: String, with new: String) {
        state.withLock {
            $0.replacements[old] = new
            $0.known.insert(new)
        }
    }

    /// Makes every access token issued so far expired (the next send with one gets 401 `AccessTokenExpired`).
    public func expireAccessTokens() {
        state.withLock { state in
            for key in state.accessTokens.keys { state.accessTokens[key] = .now - .seconds(1) }
        }
    }

    /// Token requests answered with a token.
    public var tokenRequestCount: Int { state.withLock { $0.tokenRequests } }
    /// Send requests that reached the registration check (accepted or refused for their registration id).
    public var sendRequestCount: Int { state.withLock { $0.sendRequests } }

    /// Sets the injected faults.
    public func setFaults(_ faults: FaultInjection) { recorder.faults = faults }

    /// Clears records, faults and registration marks (issued access tokens stay valid).
    public func reset() {
        recorder.reset()
        recorder.faults = .none
        state.withLock { state in
            let tokens = state.accessTokens
            state = ADMEmulatorState()
            state.accessTokens = tokens
        }
    }
}

/// Issued access tokens, registration marks and counters of an ``ADMEmulator``.
struct ADMEmulatorState {
    var accessTokens: [String: ContinuousClock.Instant] = [:]
    var known = Set<String>()
    var invalid = Set<String>()
    var unregistered = Set<String>()
    var replacements: [String: String] = [:]
    var tokenRequests = 0
    var sendRequests = 0
}
