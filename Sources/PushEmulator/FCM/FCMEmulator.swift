import AdapterKit
import Foundation
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import _CryptoExtras

/// A strict local FCM: Google's OAuth 2.0 token endpoint (`POST /token`, JWT-bearer grant) and the HTTP v1 send
/// endpoint (`POST /v1/projects/{id}/messages:send`) over TLS with HTTP/2 (ALPN) and HTTP/1.1.
///
/// It verifies what Google verifies: the assertion's RS256 signature against the service account's public key and
/// its claims (`iss`, `scope`, `aud`, `iat`/`exp`, lifetime at most one hour); bearer tokens it issued and their
/// expiry; the message (exactly one target, string data values, reserved keys, size) and the project id. It answers
/// with Google's error format. An admin API on its own port (`/_emulator/...`) and the same Swift API let tests mark
/// tokens unregistered, inject faults and read what was accepted.
public final class FCMEmulator: PlatformEmulator, Sendable {
    /// The emulator's settings.
    public struct Configuration: Sendable {
        /// Address to bind.
        public var host: String
        /// Port of the token and send endpoints (0 picks a free port).
        public var port: Int
        /// Port of the admin API (0 picks a free port).
        public var adminPort: Int
        /// The Firebase project whose messages are accepted.
        public var projectID: String
        /// The service account's e-mail: assertions' `iss` must match.
        public var clientEmail: String
        /// The service account key's id: an assertion's `kid`, when given, must match.
        public var privateKeyID: String
        /// The service account's public key, which assertions must be signed with.
        public var publicKey: _RSA.Signing.PublicKey
        /// Lifetime of issued access tokens (shorten it to exercise renewal).
        public var accessTokenLifetime: Duration
        /// Clock skew tolerated on `iat` and `exp`.
        public var clockSkew: TimeInterval

        /// Creates settings.
        public init(
            host: String = "127.0.0.1", port: Int = 0, adminPort: Int = 0, projectID: String,
            clientEmail: String, privateKeyID: String, publicKey: _RSA.Signing.PublicKey,
            accessTokenLifetime: Duration = .seconds(3600), clockSkew: TimeInterval = 60
        ) {
            self.host = host
            self.port = port
            self.adminPort = adminPort
            self.projectID = projectID
            self.clientEmail = clientEmail
            self.privateKeyID = privateKeyID
            self.publicKey = publicKey
            self.accessTokenLifetime = accessTokenLifetime
            self.clockSkew = clockSkew
        }
    }

    /// The bound ports.
    public typealias Ports = EmulatorPorts


    public let name = "fcm"
    /// The settings.
    public let configuration: Configuration
    /// Accepted messages, violations and injected faults.
    public let recorder = EmulatorRecorder<FCMReceivedMessage>()
    let tls: EmulatorTLS
    let logger: Logger
    let state = Mutex(FCMEmulatorState())
    private let listeners: EmulatorListeners

    /// Creates an emulator (not started).
    public init(configuration: Configuration, tls: EmulatorTLS, logger: Logger) {
        self.configuration = configuration
        self.tls = tls
        self.logger = logger
        self.listeners = EmulatorListeners(
            label: "FCM emulator", host: configuration.host, servicePort: configuration.port, adminPort: configuration.adminPort,
            logger: logger)
    }

    /// Serves until graceful shutdown or cancellation.
    public func run() async throws {
        // One request per device: served at frame level so that the emulator is not what limits a fan-out.
        try await listeners.run(
            tls: tls, transport: .frameLevelHTTP2, service: { await self.serve($0) }, admin: { await self.serveAdmin($0) })
    }

    /// The bound ports, once both servers listen.
    public func ports() async -> Ports { await listeners.ports() }

    /// The service port once bound (the configured port before).
    var boundServicePort: Int { listeners.boundServicePort }

    /// The token endpoint's URL for a bound port: `https://{host}:{port}/token`.
    public func tokenURI(port: Int) -> String { "https://\(configuration.host):\(port)/token" }

    // MARK: Swift admin API

    /// Makes sends to these registration tokens fail with 404 `UNREGISTERED`.
    public func unregister(_ tokens: [String]) { mark(tokens, .unregistered) }
    /// Makes sends to these registration tokens fail with 403 `SENDER_ID_MISMATCH`.
    public func markSenderMismatch(_ tokens: [String]) { mark(tokens, .senderMismatch) }
    /// Makes sends to these registration tokens fail with 401 `THIRD_PARTY_AUTH_ERROR`.
    public func markThirdPartyAuthError(_ tokens: [String]) { mark(tokens, .thirdPartyAuthError) }

    private func mark(_ tokens: [String], _ tokenState: FCMEmulatorState.TokenState) {
        state.withLock { state in for token in tokens { state.tokenStates[token] = tokenState } }
    }

    /// Records that the device holding `token` registered installation ID `fid` (the SDK's move from `getToken()`
    /// to `register()`): from now on sends to `token` fail with 404 `UNREGISTERED`, sends to `fid` are accepted.
    public func registerFID(_ fid: String, replacing token: String) {
        state.withLock { $0.supersededTokens[token] = fid }
    }

    /// The installation ID that superseded `token`, if one did.
    public func fid(superseding token: String) -> String? {
        state.withLock { $0.supersededTokens[token] }
    }

    /// Invalidates every access token issued so far (the next send with one gets 401).
    public func revokeAccessTokens() {
        state.withLock { $0.accessTokens.removeAll() }
    }

    /// Access tokens issued so far.
    public var tokenRequestCount: Int { state.withLock { $0.tokenRequests } }
    /// Token requests refused (bad assertion).
    public var rejectedTokenRequestCount: Int { state.withLock { $0.rejectedTokenRequests } }
    /// Sends refused with 401 because the bearer token was missing, unknown or expired.
    public var unauthenticatedSendCount: Int { state.withLock { $0.unauthenticatedSends } }

    /// Sets the injected faults.
    public func setFaults(_ faults: FaultInjection) { recorder.faults = faults }

    /// Clears records, faults and token marks (issued access tokens stay valid).
    public func reset() {
        recorder.reset()
        recorder.faults = .none
        state.withLock { state in
            state.tokenStates.removeAll()
            state.supersededTokens.removeAll()
            state.tokenRequests = 0
            state.rejectedTokenRequests = 0
            state.unauthenticatedSends = 0
        }
    }
}
