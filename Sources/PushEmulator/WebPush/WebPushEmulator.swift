import AdapterKit
import Crypto
import Foundation
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A strict local Web Push service (RFC 8030) over TLS with HTTP/2 (ALPN) and HTTP/1.1, standing in for the push
/// services of browsers and for the browsers themselves.
///
/// Subscriptions are made through its admin API (or ``createSubscription(applicationServerKey:)``); the emulator
/// keeps each one's private key, and decrypts every message sent to it (RFC 8291, `aes128gcm`). It checks what a push
/// service and a browser check: VAPID (RFC 8292: `Authorization: vapid t=…, k=…`, an ES256 JWT whose `aud` is this
/// service's origin, `exp` in the future and at most 24 hours away, a `mailto:` or `https:` `sub`, and `k` matching a
/// restricted subscription's key), a `TTL`, `Urgency` and `Topic` in their RFC forms, `Content-Encoding: aes128gcm`,
/// a body of at most 4096 bytes, and a record that decrypts and is padded as a last record. It answers 201 with a
/// `Location`, 404 for an unknown subscription, 410 for an expired one, 401/403 for VAPID failures, 400 for
/// malformed requests and 413 for large bodies; faults add 429 (with `Retry-After` in seconds or as an HTTP date),
/// 500, 503, latency and dropped connections.
public final class WebPushEmulator: PlatformEmulator, Sendable {
    /// The emulator's settings.
    public struct Configuration: Sendable {
        /// Address to bind.
        public var host: String
        /// The host name in endpoints (a name, since the hub refuses IP literals); it must resolve to ``host``.
        public var publicHost: String
        /// Port of the push endpoints (0 picks a free port).
        public var port: Int
        /// Port of the admin API (0 picks a free port).
        public var adminPort: Int
        /// Clock skew tolerated on the VAPID token's `exp`.
        public var clockSkew: TimeInterval
        /// The largest message body accepted.
        public var maximumMessageBytes: Int

        /// Creates settings.
        public init(
            host: String = "127.0.0.1", publicHost: String = "localhost", port: Int = 0, adminPort: Int = 0,
            clockSkew: TimeInterval = 60, maximumMessageBytes: Int = 4096
        ) {
            self.host = host
            self.publicHost = publicHost
            self.port = port
            self.adminPort = adminPort
            self.clockSkew = clockSkew
            self.maximumMessageBytes = maximumMessageBytes
        }
    }

    /// The bound ports.
    public typealias Ports = EmulatorPorts


    public let name = "webpush"
    /// The settings.
    public let configuration: Configuration
    /// Accepted (decrypted) messages, violations and injected faults.
    public let recorder = EmulatorRecorder<WebPushReceivedMessage>()
    let tls: EmulatorTLS
    let logger: Logger
    let state = Mutex(WebPushEmulatorState())
    private let listeners: EmulatorListeners

    /// Creates an emulator (not started).
    public init(configuration: Configuration, tls: EmulatorTLS, logger: Logger) {
        self.configuration = configuration
        self.tls = tls
        self.logger = logger
        self.listeners = EmulatorListeners(
            label: "Web Push emulator", host: configuration.host, servicePort: configuration.port, adminPort: configuration.adminPort,
            logger: logger)
    }

    /// Serves until graceful shutdown or cancellation.
    public func run() async throws {
        try await listeners.run(tls: tls, service: { await self.serve($0) }, admin: { await self.serveAdmin($0) })
    }

    /// The bound ports, once both servers listen.
    public func ports() async -> Ports { await listeners.ports() }

    /// The service port once bound (the configured port before).
    var boundServicePort: Int { listeners.boundServicePort }

    /// This service's origin, the audience VAPID tokens must name: `https://{publicHost}:{port}`.
    public var origin: String { "https://\(configuration.publicHost):\(boundServicePort)" }

    // MARK: Swift admin API

    /// Makes a subscription, as a browser's `pushManager.subscribe()` would: a new P-256 key pair and auth secret.
    /// With `applicationServerKey` (base64url VAPID public key) only that key's tokens are accepted for it.
    public func createSubscription(applicationServerKey: String? = nil) -> WebPushEmulatorSubscription {
        let privateKey = P256.KeyAgreement.PrivateKey()
        let authSecret = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        let id = (0..<3).map { _ in String(UInt64.random(in: .min ... .max), radix: 36) }.joined(separator: "-")
        let subscription = WebPushEmulatorSubscription(
            id: id, endpoint: "\(origin)/push/\(id)", p256dh: Base64URL.encode(privateKey.publicKey.x963Representation),
            auth: Base64URL.encode(authSecret), applicationServerKey: applicationServerKey, privateKey: privateKey,
            authSecret: authSecret)
        state.withLock { $0.subscriptions[id] = .active(subscription) }
        return subscription
    }

    /// Expires a subscription: later messages to it get 410 Gone.
    public func expire(_ id: String) {
        state.withLock { state in
            if state.subscriptions[id] != nil { state.subscriptions[id] = .expired }
        }
    }

    /// Forgets a subscription: later messages to it get 404 Not Found.
    public func remove(_ id: String) {
        state.withLock { _ = $0.subscriptions.removeValue(forKey: id) }
    }

    /// An answer given instead of checking a request, for driving error paths.
    public struct ScriptedAnswer: Sendable, Hashable {
        /// The status.
        public var status: Int
        /// A `Retry-After` value, if any.
        public var retryAfter: String?

        /// Creates an answer.
        public init(status: Int, retryAfter: String? = nil) {
            self.status = status
            self.retryAfter = retryAfter
        }
    }

    /// Makes the next requests to subscription `id` get `answers` in turn (then normal checking resumes).
    public func script(_ id: String, _ answers: [ScriptedAnswer]) {
        state.withLock { $0.scripted[id] = answers }
    }

    /// Requests made to push endpoints so far (valid or not).
    public var requestCount: Int { state.withLock { $0.requestCount } }

    /// Sets the injected faults.
    public func setFaults(_ faults: FaultInjection) { recorder.faults = faults }

    /// Sends `Retry-After` as an HTTP date instead of seconds.
    public func setRetryAfterAsDate(_ asDate: Bool) { state.withLock { $0.retryAfterAsDate = asDate } }

    /// Requests refused (any 4xx other than 404/410).
    public var rejectedCount: Int { state.withLock { $0.rejectedCount } }

    /// Clears records and faults (subscriptions stay).
    public func reset() {
        recorder.reset()
        recorder.faults = .none
        state.withLock { state in
            state.rejectedCount = 0
            state.requestCount = 0
            state.retryAfterAsDate = false
            state.scripted.removeAll()
        }
    }
}
