import AdapterKit
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceLifecycle
import Synchronization

/// A strict local Windows Push Notification Services: an OAuth token endpoint (`POST /accesstoken.srf`) and
/// channel endpoints (`POST /w/?token=<channel-id>`) over TLS, plus a plain-HTTP admin API under `/_emulator/`.
///
/// Channels must be created first (``createChannel(id:)`` or `POST /_emulator/channels`); unknown channels answer
/// 404. Every request is checked against WNS's rules (bearer token issued here and not expired, `X-WNS-Type`,
/// `Content-Type`, size, well-formed XML with the right root element, `X-WNS-*` header values); violations are
/// recorded and answered with WNS's status codes and `X-WNS-Error-Description`.
public final class WNSEmulator: PlatformEmulator, Sendable {
    /// The emulator's settings.
    public struct Settings: Sendable {
        /// Address to bind. Default `127.0.0.1`.
        public var host: String
        /// TLS port for the token and channel endpoints; 0 picks a free port.
        public var port: Int
        /// Plain-HTTP port for the admin API; 0 picks a free port.
        public var adminPort: Int
        /// The package SID clients must authenticate with.
        public var packageSID: String
        /// The client secret clients must authenticate with.
        public var clientSecret: String
        /// Lifetime of issued access tokens. Default 86400 seconds, as WNS.
        public var tokenLifetime: Duration
        /// Accept notifications to channel ids never created (instead of 404). Default false.
        public var acceptUnknownChannels: Bool
        /// A Windows App SDK app registered in Microsoft Entra ID, whose tokens come from
        /// `POST /{tenant}/oauth2/v2.0/token`; `nil` serves only the Live endpoint.
        public var entra: EntraApp?

        /// An app registration in Microsoft Entra ID, with a client secret, certificates, or both.
        public struct EntraApp: Sendable, Hashable {
            /// The directory (tenant) id in the token endpoint's path.
            public var tenantID: String
            /// The client secret (never logged); `nil` for an app that has certificate credentials only, which
            /// refuses every secret.
            public var clientSecret: String?
            /// The application (client) id.
            public var clientID: String
            /// Certificates uploaded to the app registration (PEM, RSA keys), whose private keys may sign client
            /// assertions. More can be added while running with ``WNSEmulator/registerEntraCertificate(pem:)``.
            public var certificatePEMs: [String]

            /// Creates an app registration.
            public init(tenantID: String, clientID: String, clientSecret: String? = nil, certificatePEMs: [String] = []) {
                self.tenantID = tenantID
                self.clientID = clientID
                self.clientSecret = clientSecret
                self.certificatePEMs = certificatePEMs
            }
        }

        /// Creates settings.
        public init(
            host: String = "127.0.0.1", port: Int = 0, adminPort: Int = 0, packageSID: String, clientSecret: String,
            tokenLifetime: Duration = .seconds(86400), acceptUnknownChannels: Bool = false, entra: EntraApp? = nil
        ) {
            self.entra = entra
            self.host = host
            self.port = port
            self.adminPort = adminPort
            self.packageSID = packageSID
            self.clientSecret = clientSecret
            self.tokenLifetime = tokenLifetime
            self.acceptUnknownChannels = acceptUnknownChannels
        }
    }

    /// What a channel answers.
    public enum ChannelState: String, Sendable, Hashable, Codable, CaseIterable {
        /// Accepts notifications (200, `X-WNS-Status: received`).
        case active
        /// 410 Gone: the channel expired.
        case expired
        /// 403 Forbidden: the channel belongs to another app.
        case otherApp
        /// 200 with `X-WNS-Status: dropped`.
        case dropped
        /// 200 with `X-WNS-Status: channelthrottled`.
        case throttled
        /// 404 Not Found, as if never created.
        case unknown
    }

    /// A notification the emulator accepted.
    public struct Received: Sendable, Hashable, Codable {
        /// The channel id (the `token` query parameter).
        public var channel: String
        /// `X-WNS-Type`.
        public var type: String
        /// `Content-Type`.
        public var contentType: String
        /// The `X-WNS-*` headers sent besides the type.
        public var headers: [String: String]
        /// The payload as UTF-8 text.
        public var payload: String
        /// The message id answered in `X-WNS-Msg-ID`.
        public var messageID: String
    }

    /// A fault for the next requests to channels, regardless of rates.
    public struct ScriptedFault: Sendable, Hashable {
        /// The status to answer (e.g. 503, 406, 500).
        public var status: Int
        /// `Retry-After` seconds, if any.
        public var retryAfterSeconds: Int?
        /// `Retry-After` as an HTTP date, if any (instead of seconds).
        public var retryAfterDate: Date?

        /// Creates a scripted fault.
        public init(status: Int, retryAfterSeconds: Int? = nil, retryAfterDate: Date? = nil) {
            self.status = status
            self.retryAfterSeconds = retryAfterSeconds
            self.retryAfterDate = retryAfterDate
        }
    }

    struct State {
        var channels: [String: ChannelState] = [:]
        var tokens: [String: Date] = [:]
        /// Tokens issued by the Entra endpoint (their apps take raw and toast only).
        var entraTokens: Set<String> = []
        var tokenRequests = 0
        var entraTokenRequests = 0
        var tokenLifetime: Duration
        var expiresInAsString = false
        var scripted: [ScriptedFault] = []
        /// Certificates registered for the Entra app (``Settings/EntraApp/certificatePEMs`` and later ones).
        var entraCertificates: [EntraCertificate] = []
        /// Client assertions the Entra endpoint checked, oldest first.
        var entraAssertions: [EntraAssertion] = []
        /// `jti`s of accepted assertions (a reused one is recorded as a violation).
        var assertionIDs: Set<String> = []
    }

    private enum Servers {
        case stopped
        case running(api: WNSHTTPServer, admin: WNSHTTPServer)
        case closed
    }

    /// `wns`.
    public let name = "wns"
    /// The settings.
    public let settings: Settings
    /// Accepted notifications, violations and faults.
    public let recorder = EmulatorRecorder<Received>()
    let state: Mutex<State>
    /// Root element names of well-formed XML documents seen recently.
    let xmlDocuments = Mutex<[ByteBuffer: String]>([:])
    private let servers = Mutex(Servers.stopped)
    private let tls: EmulatorTLS
    private let logger: Logger

    /// Creates an emulator (not yet listening).
    public init(settings: Settings, tls: EmulatorTLS, logger: Logger) {
        self.settings = settings
        self.tls = tls
        self.logger = logger
        var initial = State(tokenLifetime: settings.tokenLifetime)
        // Certificates that cannot be read are left out: a credential signed with their key is refused.
        initial.entraCertificates = settings.entra?.certificatePEMs.compactMap { try? EntraCertificate(pem: $0) } ?? []
        self.state = Mutex(initial)
    }

    // MARK: Lifecycle

    /// Binds both ports (once) and starts serving.
    public func start() async throws {
        if case .stopped = servers.withLock({ $0 }) {} else { return }
        let context = try NIOSSLContext(configuration: tls.serverConfiguration(applicationProtocols: ["http/1.1"]))
        let api = try await WNSHTTPServer.start(
            host: settings.host, port: settings.port, tls: context, maximumBodyBytes: 1 << 20
        ) { [self] request in handle(request) }
        let admin: WNSHTTPServer
        do {
            admin = try await WNSHTTPServer.start(
                host: settings.host, port: settings.adminPort, tls: nil, maximumBodyBytes: 1 << 20
            ) { [self] request in handleAdmin(request) }
        } catch {
            await api.close()
            throw error
        }
        servers.withLock { $0 = .running(api: api, admin: admin) }
        logger.info(
            "WNS emulator listening",
            metadata: ["emulator.port": "\(api.port)", "emulator.adminPort": "\(admin.port)"])
    }

    /// Stops serving.
    public func stop() async {
        let running = servers.withLock { servers -> (WNSHTTPServer, WNSHTTPServer)? in
            defer { servers = .closed }
            if case .running(let api, let admin) = servers { return (api, admin) }
            return nil
        }
        if let (api, admin) = running {
            await api.close()
            await admin.close()
        }
    }

    /// Serves until graceful shutdown.
    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await stop()
    }

    /// The TLS port of the token and channel endpoints (0 before ``start()``).
    public var port: Int {
        servers.withLock { if case .running(let api, _) = $0 { api.port } else { 0 } }
    }

    /// The admin API's port (0 before ``start()``).
    public var adminPort: Int {
        servers.withLock { if case .running(_, let admin) = $0 { admin.port } else { 0 } }
    }

    /// The most connections open at the same time on the notification port.
    public var peakOpenConnections: Int {
        servers.withLock { if case .running(let api, _) = $0 { api.peakOpenConnections } else { 0 } }
    }

    /// Connections accepted so far on the notification port.
    public var connectionCount: Int {
        servers.withLock { if case .running(let api, _) = $0 { api.connectionCount } else { 0 } }
    }

    /// The token endpoint's URL.
    public var tokenEndpoint: String { "https://\(settings.host):\(port)/accesstoken.srf" }

    /// The Entra token endpoint's URL for `tenantID` (by default the configured app's tenant).
    public func entraTokenEndpoint(tenantID: String? = nil) -> String {
        "https://\(settings.host):\(port)/\(tenantID ?? settings.entra?.tenantID ?? "common")/oauth2/v2.0/token"
    }

    // MARK: Swift API

    /// Creates an active channel and returns its channel URI.
    @discardableResult
    public func createChannel(id: String? = nil) -> String {
        let id = id ?? Self.randomHex(16)
        state.withLock { $0.channels[id] = .active }
        return channelURI(id: id)
    }

    /// Creates `count` active channels and returns their URIs.
    /// Issues an access token as a successful token request would (not counted as one), for a load tool such as
    /// `wrk` that sends channel requests without asking for a token.
    public func issueAccessToken() -> String {
        let token = "EgB" + Self.randomHex(24)
        state.withLock { $0.tokens[token] = Date() + Double($0.tokenLifetime.components.seconds) }
        return token
    }

    public func createChannels(count: Int, prefix: String = "c") -> [String] {
        let ids = (0..<count).map { "\(prefix)\($0)" }
        state.withLock { state in
            for id in ids { state.channels[id] = .active }
        }
        return ids.map(channelURI(id:))
    }

    /// The URI of a channel id.
    public func channelURI(id: String) -> String {
        "https://\(settings.host):\(port)/w/?token=\(id)"
    }

    /// The channel id in a channel URI.
    public static func channelID(of uri: String) -> String? {
        guard let mark = uri.firstIndex(of: "?") else { return nil }
        return WNSHTTPRequest.parseForm(String(uri[uri.index(after: mark)...]))["token"]
    }

    /// Sets what a channel answers.
    public func setChannel(_ id: String, _ channelState: ChannelState) {
        state.withLock { $0.channels[id] = channelState == .unknown ? nil : channelState }
    }

    /// Makes every issued token expired (the next request with one gets 401 "Token expired").
    public func expireAllTokens() {
        state.withLock { state in
            for token in state.tokens.keys { state.tokens[token] = .distantPast }
        }
    }

    /// Sets the lifetime of tokens issued from now on.
    public func setTokenLifetime(_ lifetime: Duration) {
        state.withLock { $0.tokenLifetime = lifetime }
    }

    /// Sends `expires_in` as a string (`"86400"`) instead of a number, as some token endpoints do.
    public func setExpiresInAsString(_ asString: Bool) {
        state.withLock { $0.expiresInAsString = asString }
    }

    /// Answers the next channel requests with these faults, in order, before any rate-based fault.
    public func script(_ faults: [ScriptedFault]) {
        state.withLock { $0.scripted.append(contentsOf: faults) }
    }

    /// How many tokens the token endpoints issued (both).
    public var tokenRequestCount: Int { state.withLock { $0.tokenRequests } }
    /// How many of them the Entra endpoint issued.
    public var entraTokenRequestCount: Int { state.withLock { $0.entraTokenRequests } }

    /// Uploads a certificate (PEM, RSA key) to the Entra app registration, as the portal's "Upload certificate" does;
    /// returns its `x5t#S256` thumbprint. Throws ``HubError/Code/invalidConfiguration`` for anything but an RSA
    /// certificate.
    @discardableResult
    public func registerEntraCertificate(pem: String) throws(HubError) -> String {
        let certificate = try EntraCertificate(pem: pem)
        state.withLock { state in
            if !state.entraCertificates.contains(where: { $0.thumbprintSHA256 == certificate.thumbprintSHA256 }) {
                state.entraCertificates.append(certificate)
            }
        }
        return certificate.thumbprintSHA256
    }

    /// The client assertions the Entra endpoint checked, oldest first, with what it decided.
    public var entraAssertions: [EntraAssertion] { state.withLock { $0.entraAssertions } }

    /// Clears records, faults, scripted faults and checked assertions (channels, tokens and certificates stay).
    public func reset() {
        recorder.reset()
        recorder.faults = .none
        state.withLock { state in
            state.scripted.removeAll()
            state.entraAssertions.removeAll()
        }
    }

    static func randomHex(_ bytes: Int) -> String {
        var text = ""
        text.reserveCapacity(bytes * 2)
        for _ in 0..<bytes {
            let byte = UInt8.random(in: 0...255)
            text += String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }
        return text
    }
}
