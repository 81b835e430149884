import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceLifecycle
import Synchronization

/// Delivers `windows` notifications (raw, toast, tile, badge) to WNS channel URIs.
///
/// Authentication uses OAuth client credentials from the configured ``WNSAuthority``: Live (package SID and client
/// secret) or Microsoft Entra ID (application id and a client secret or a certificate credential, see
/// ``WNSClientCertificate``; raw and toast only); the access token is cached until
/// shortly before it expires and renewed once when WNS answers 401. Requests go over HTTP/1.1 through one
/// connection pool (``WNSSettings/maximumConnections`` per host) with at most
/// ``WNSSettings/maximumConcurrentRequests`` in flight.
///
/// Without `X-WNS-Type`, the type is inferred from the body: an XML document whose root element is `toast`, `tile`
/// or `badge` is sent as that type, anything else as `wns/raw`.
///
/// Toast, tile and badge documents go to WNS as UTF-8; a declaration naming `utf-16` on UTF-8 bytes (how the .NET
/// SDK sends every XML notification) is rewritten to name `utf-8` (see ``WNSXMLEncoding``).
public final class WNSAdapter: PlatformAdapter, Sendable {
    /// The WNS platform, the `windows` format, and Azure's `Windows(Template)RegistrationDescription`.
    public static let descriptor = PlatformDescriptor(
        platforms: [.wns],
        formats: [.windows: [.wns]],
        templateFormats: [.wns: .windows],
        maximumPayloadBytes: WNSPayloadRules.maximumPayloadBytes,
        telemetryNames: [.wns: "Wns"],
        registrationFormats: [
            // Azure's SDKs require WnsHeaders in a Windows template description, so it is always written.
            RegistrationFormat(
                platform: .wns, prefix: "Windows", channel: .element("ChannelUri"),
                templateElements: [.headers(list: "WnsHeaders", item: "WnsHeader", writtenWhenEmpty: true), .templateName])
        ],
        samples: [
            .windows: NotificationSample(
                body: #"<toast><visual><binding template="ToastGeneric"><text>Hello</text><text>From the NotificationHub console</text></binding></visual></toast>"#,
                headers: ["X-WNS-Type": "wns/toast"], contentType: "application/xml;charset=utf-8")
        ])

    /// What the adapter serves: ``descriptor``.
    public var descriptor: PlatformDescriptor { Self.descriptor }

    /// The adapter's settings (its client secret included: never log them).
    public let configuration: WNSSettings
    let logger: Logger
    /// The token endpoint's client.
    private let client: LazyHTTPClient
    /// The channel hosts' connections.
    let channels: HTTP1ConnectionPool
    private let tokens: TokenCache<SingleToken, String>
    private let allowedHosts: Set<String>

    /// Creates the adapter; its HTTP client starts on first use and stops when ``run()`` ends or on ``shutdown()``.
    public init(configuration: WNSSettings, clock: any WallClock = SystemWallClock(), logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        var tls = TLSConfiguration.makeClientConfiguration()
        if !configuration.additionalTrustRoots.isEmpty {
            tls.additionalTrustRoots = [.certificates(configuration.additionalTrustRoots)]
        }
        self.channels = HTTP1ConnectionPool(
            settings: .init(
                maximumConnectionsPerHost: max(1, min(configuration.maximumConnections, configuration.maximumConcurrentRequests)),
                connectTimeout: min(.seconds(10), configuration.requestTimeout).timeAmount, tls: tls))
        let client = LazyHTTPClient(
            configuration: LazyHTTPClient.configuration(
                trusting: configuration.additionalTrustRoots, connectTimeout: min(.seconds(10), configuration.requestTimeout),
                maximumConnectionsPerHost: configuration.maximumConnections, httpVersion: .http1Only))
        self.client = client
        self.allowedHosts = Set(configuration.allowedChannelHosts.map { $0.lowercased() })
        self.tokens = TokenCache(clock: clock) {
            do {
                let token = try await Self.requestToken(
                    client: try client.client(), configuration: configuration, now: clock.now())
                logger.debug(
                    "obtained a WNS access token", metadata: ["wns.expiresIn": "\(token.lifetime.components.seconds)"])
                // Renew a tenth of the lifetime (at most five minutes) before WNS would reject the token.
                let margin = min(.seconds(300), token.lifetime / 10)
                return .init(token.value, refreshAt: clock.now() + (token.lifetime - margin).secondsValue)
            } catch {
                logger.warning("could not obtain a WNS access token", metadata: ["error": "\(error)"])
                throw error
            }
        }
    }

    /// How many token requests the adapter has made (for tests and benchmarks).
    public var tokenRequestCount: Int {
        get async { await tokens.fetchCount }
    }

    // MARK: Service

    /// Waits for graceful shutdown, then closes the connection pool.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes the connection pool; later deliveries end as `PnsUnreachable`.
    public func shutdown() async throws {
        await channels.close()
        try await client.shutdown()
    }

    // MARK: Validation

    /// Accepts `https` channel URIs on `*.notify.windows.com` or on an allowed host.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard let uri = pushChannel.handle else {
            throw HubError(.invalidPushChannel, "a WNS push channel is a channel URI string")
        }
        guard uri.utf8.count <= 2048, let components = URLComponents(string: uri), let host = components.host?.lowercased(),
            !host.isEmpty
        else {
            throw HubError(.invalidPushChannel, "the WNS channel URI is not a valid URI")
        }
        guard components.scheme?.lowercased() == "https" else {
            throw HubError(.invalidPushChannel, "a WNS channel URI must use https")
        }
        let port = components.port ?? 443
        if host.hasSuffix(".notify.windows.com"), port == 443 { return }
        if allowedHosts.contains("\(host):\(port)") || (port == 443 && allowedHosts.contains(host)) { return }
        throw HubError(
            .invalidPushChannel,
            "the WNS channel URI's host '\(host)' is not a WNS host (*.notify.windows.com) nor one of allowedChannelHosts")
    }

    /// Checks a `windows` payload: size, `X-WNS-*` headers, and for toast/tile/badge well-formed UTF-8 XML with the
    /// matching root element (see ``WNSXMLEncoding`` for the declaration the .NET SDK adds).
    /// With the ``WNSAuthority/entra(tenantID:)`` authority, tile and badge notifications are refused.
    public func validate(notification: NotificationContent) throws(HubError) {
        let type = try WNSPayloadRules.check(payload: notification.body, headers: notification.headers)
        guard configuration.authority.allows(type) else {
            throw HubError(.invalidNotification, configuration.authority.refusal(of: type))
        }
    }

    // MARK: Hooks

    /// Announces a secure notification (see ``announcements(for:)``).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        Self.announcements(for: request)
    }

    /// A raw notification whose body is the id.
    public static func announcements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        [
            SecurePushAnnouncement(
                format: .windows, body: request.id,
                headers: ["X-WNS-Type": "wns/raw", "Content-Type": "application/octet-stream"])
        ]
    }

    // MARK: Delivery

    /// A request ready to send.
    struct PreparedRequest: Sendable {
        var uri: String
        var type: WNSNotificationType
        var payload: ByteBuffer
        var headers: [(String, String)]
    }

    private struct CheckKey: Hashable {
        var payload: ByteBuffer
        var type: String
    }

    /// Delivers each notification with its own request; returns one result per delivery, in order.
    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        var results = [DeliveryResult](repeating: .success, count: deliveries.count)
        var prepared: [(Int, PreparedRequest)] = []
        prepared.reserveCapacity(deliveries.count)
        // Template deliveries carry rendered bodies and headers, so every delivery is checked; identical bodies
        // (a native send) are checked once per batch.
        var checked: [CheckKey: Result<ByteBuffer, HubError>] = [:]
        for (index, delivery) in deliveries.enumerated() {
            guard let uri = delivery.pushChannel.handle else {
                results[index] = DeliveryResult(.badChannel, reason: "the channel is not a URI")
                continue
            }
            do throws(HubError) {
                let type = try WNSPayloadRules.checkHeaders(delivery.headers, payload: delivery.payload)
                // A rendered template may name a type the app cannot receive: refused without a request.
                guard configuration.authority.allows(type) else {
                    throw HubError(.invalidNotification, configuration.authority.refusal(of: type))
                }
                let key = CheckKey(payload: delivery.payload, type: type.rawValue)
                let document: Result<ByteBuffer, HubError>
                if let known = checked[key] {
                    document = known
                } else {
                    document = Result { () throws(HubError) -> ByteBuffer in
                        try WNSPayloadRules.checkBody(delivery.payload, type: type)
                    }
                    checked[key] = document
                }
                let payload = try document.get()
                var headers: [(String, String)] = []
                for name in WNSPayloadRules.passthroughHeaders {
                    if let value = delivery.headers[name] { headers.append((name, value)) }
                }
                prepared.append((index, PreparedRequest(uri: uri, type: type, payload: payload, headers: headers)))
            } catch {
                results[index] = DeliveryResult(
                    error.code == .payloadTooLarge ? .invalidNotificationSize : .invalidNotificationFormat,
                    reason: error.message)
            }
        }
        guard !prepared.isEmpty else { return results }
        // One access token for the batch; a request WNS answers 401 renews it (see send(_:token:retry:context:)).
        let token: String
        do {
            token = try await tokens.token()
        } catch {
            let result = Self.result(forTokenFailure: error)
            for (index, _) in prepared { results[index] = result }
            return results
        }
        let answers = await send(
            prepared.map(\.1), token: token, retries: prepared.map { deliveries[$0.0].attempt - 1 }, context: context)
        for (position, (index, _)) in prepared.enumerated() { results[index] = answers[position] }
        return results
    }

    /// Sends one request (see ``send(_:token:retries:context:)``).
    func send(_ request: PreparedRequest, retry: Int = 0, context: DeliveryContext) async -> DeliveryResult {
        do {
            return await send([request], token: try await tokens.token(), retries: [retry], context: context)[0]
        } catch {
            return Self.result(forTokenFailure: error)
        }
    }

    /// Sends requests together over the channel hosts' keep-alive connections with `token`; renews the token once
    /// and sends again those WNS answered 401. Bounded by the call's deadline. `retries` are the deliveries' retry
    /// numbers, for their spans (``PlatformTracing``).
    func send(_ requests: [PreparedRequest], token: String, retries: [Int], context: DeliveryContext) async -> [DeliveryResult] {
        let started = PlatformTracing.startOfRequests()
        var answers = await post(requests, token: token, context: context)
        var results = [DeliveryResult?](repeating: nil, count: requests.count)
        var renewed: Set<Int> = []
        let refused = answers.indices.filter { if case .answered(401, _) = answers[$0] { true } else { false } }
        if !refused.isEmpty {
            context.logger.info("WNS refused the access token; obtaining a new one", metadata: ["push.platform": "wns"])
            await tokens.invalidate(token)
            do {
                let again = await post(refused.map { requests[$0] }, token: try await tokens.token(), context: context)
                for (position, index) in refused.enumerated() { answers[index] = again[position] }
                renewed = Set(refused)
            } catch {
                for index in refused { results[index] = Self.result(forTokenFailure: error) }
            }
        }
        let final = answers.indices.map { index -> DeliveryResult in
            if let result = results[index] { return result }
            if renewed.contains(index), case .answered(401, let headers) = answers[index] {
                return DeliveryResult(.invalidCredentials, reason: Self.reason(headers) ?? "WNS rejected the access token")
            }
            return answers[index].result
        }
        if started != nil {
            PlatformTracing.record(
                startedAt: started,
                final.indices.map { index in
                    var status: Int?
                    if case .answered(let code, _) = answers[index] { status = code }
                    return (
                        PlatformTracing.Request(retry: retries[index], status: status, renewedToken: renewed.contains(index)),
                        final[index]
                    )
                })
        }
        return final
    }

    /// The outcome of every delivery when no access token could be had.
    static func result(forTokenFailure error: any Error) -> DeliveryResult {
        if let error = error as? WNSError {
            return DeliveryResult(error.outcome, reason: error.message, retryAfter: error.retryAfter)
        }
        return DeliveryResult(.pnsUnreachable, reason: "token request failed")
    }

    /// What a channel request came back with.
    enum Answer {
        case answered(Int, HTTPHeaders)
        case failed(String)

        /// The outcome of an answer (401 maps to InvalidCredentials here; ``send(_:)`` renews first).
        var result: DeliveryResult {
            switch self {
            case .failed(let reason):
                return DeliveryResult(.pnsUnreachable, reason: reason)
            case .answered(let status, let headers):
                let reason = WNSAdapter.reason(headers)
                let retryAfter = RetryAfter.parse(headers.first(name: "Retry-After"))
                switch status {
                case 200:
                    switch headers.first(name: "X-WNS-Status").map(WNSReason.init(rawValue:)) {
                    case .dropped?: return DeliveryResult(.dropped, reason: reason)
                    case .channelThrottled?: return DeliveryResult(.channelThrottled, reason: reason)
                    default: return .success
                    }
                case 400: return DeliveryResult(.invalidNotificationFormat, reason: reason ?? "HTTP 400")
                case 401: return DeliveryResult(.invalidCredentials, reason: reason ?? "HTTP 401")
                case 403: return DeliveryResult(.wrongChannel, reason: reason ?? "HTTP 403")
                case 404: return DeliveryResult(.badChannel, reason: reason ?? "HTTP 404")
                case 406: return DeliveryResult(.throttled, reason: reason ?? "HTTP 406", retryAfter: retryAfter)
                case 410: return DeliveryResult(.expiredChannel, reason: reason ?? "HTTP 410")
                case 413: return DeliveryResult(.invalidNotificationSize, reason: reason ?? "HTTP 413")
                case 500, 503: return DeliveryResult(.pnsUnavailable, reason: reason ?? "HTTP \(status)", retryAfter: retryAfter)
                default: return DeliveryResult(.unknownError, reason: reason ?? "HTTP \(status)")
                }
            }
        }
    }

    /// WNS's own explanation: `X-WNS-Error-Description`, else `X-WNS-Status`.
    static func reason(_ headers: HTTPHeaders) -> String? {
        if let description = headers.first(name: "X-WNS-Error-Description"), !description.isEmpty {
            return String(description.prefix(200))
        }
        return headers.first(name: "X-WNS-Status").map { String($0.prefix(60)) }
    }

    /// POSTs each request to its channel URI; an answer is its status and headers (the body is dropped).
    private func post(_ requests: [PreparedRequest], token: String, context: DeliveryContext) async -> [Answer] {
        var answers = [Answer?](repeating: nil, count: requests.count)
        var sent: [Int] = []
        var http: [HTTP1Request] = []
        http.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            guard let target = Self.target(of: request.uri) else {
                answers[index] = .failed("the channel is not an https URI")
                continue
            }
            var headers = HTTPHeaders()
            headers.reserveCapacity(5 + request.headers.count)
            headers.add(name: "Authorization", value: "Bearer \(token)")
            headers.add(name: "X-WNS-Type", value: request.type.rawValue)
            headers.add(name: "Content-Type", value: request.type.contentType)
            for (name, value) in request.headers { headers.add(name: name, value: value) }
            sent.append(index)
            http.append(
                HTTP1Request(
                    host: target.host, port: target.port,
                    head: HTTPRequestHead(version: .http1_1, method: .POST, uri: target.path, headers: headers),
                    body: request.payload))
        }
        let responses = await channels.send(http, timeout: context.timeout(atMost: configuration.requestTimeout).timeAmount)
        for (position, index) in sent.enumerated() {
            let response = responses[position]
            answers[index] = response.status == 0
                ? .failed("connection failed: \(response.failure ?? "ConnectionClosed")")
                : .answered(response.status, response.headers)
        }
        return answers.map { $0 ?? .failed("connection failed: NotSent") }
    }

    /// An https channel URI's host, port and request target (path and query).
    static func target(of uri: String) -> (host: String, port: Int, path: String)? {
        guard let components = URLComponents(string: uri), components.scheme?.lowercased() == "https",
            let host = components.host, !host.isEmpty
        else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        let query = components.percentEncodedQuery.map { "?" + $0 } ?? ""
        return (host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), components.port ?? 443, path + query)
    }

    /// A connection failure's description without the URI (which holds the channel token).
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "connection failed: \(error)" }
        return "connection failed: \(type(of: error))"
    }

    // MARK: Token

    struct TokenResponse: Decodable {
        var accessToken: String
        /// `expires_in`, checked and clamped (see ``PlatformNumber/tokenLifetime(expiresIn:default:bounds:)``).
        var lifetime: Duration

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            accessToken = try container.decode(String.self, forKey: .accessToken)
            // `expires_in` arrives as a number or as a string of digits; anything else counts as absent.
            var seconds: Double?
            if let number = try? container.decode(Double.self, forKey: .expiresIn) {
                seconds = number
            } else if let text = try? container.decode(String.self, forKey: .expiresIn) {
                seconds = PlatformNumber.int64(text).map(Double.init)
            }
            lifetime = PlatformNumber.tokenLifetime(expiresIn: seconds)
        }
    }

    private struct TokenErrorResponse: Decodable {
        var error: String?
        /// Entra's `AADSTS` numbers (e.g. 700027: the assertion's signature failed); never secret.
        var error_codes: [Int]?
    }

    /// Requests a token with the client-credentials grant; a certificate credential's assertion is issued at `now`.
    static func requestToken(
        client: HTTPClient, configuration: WNSSettings, now: Date = Date()
    ) async throws -> WNSAccessToken {
        var request = HTTPClientRequest(url: configuration.tokenEndpoint)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        var fields = [("grant_type", "client_credentials"), ("client_id", configuration.packageSID)]
        if let certificate = configuration.certificate {
            // A certificate credential: a new assertion for every token request, its `aud` the endpoint asked.
            let assertion = try certificate.assertion(
                clientID: configuration.packageSID, audience: configuration.tokenEndpoint, now: now)
            fields.append(("client_assertion_type", WNSClientCertificate.assertionType))
            fields.append(("client_assertion", assertion))
        } else {
            fields.append(("client_secret", configuration.clientSecret))
        }
        fields.append(("scope", configuration.authority.scope))
        let form = fields.map { "\($0.0)=\(formEncode($0.1))" }.joined(separator: "&")
        request.body = .bytes(ByteBuffer(string: form))
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await client.execute(request, deadline: .now() + configuration.requestTimeout.timeAmount)
        } catch {
            throw WNSError(.tokenEndpointUnreachable, "token endpoint: \(describe(error))")
        }
        // The status decides; an answer too large or cut short is read as far as it goes.
        body = await response.body.prefix(upTo: 64 * 1024)
        let status = Int(response.status.code)
        guard status == 200 else {
            let detail = try? JSONDecoder().decode(TokenErrorResponse.self, from: Data(body.readableBytesView))
            var reason = "token endpoint answered \(status)" + (detail?.error.map { ": \($0.prefix(60))" } ?? "")
            if let code = detail?.error_codes?.first { reason += " (AADSTS\(code))" }
            let retryAfter = RetryAfter.parse(response.headers.first(name: "Retry-After"))
            throw WNSError(
                status >= 500 || status == 429 ? .tokenEndpointUnavailable : .tokenRejected, reason, retryAfter: retryAfter)
        }
        guard let token = try? JSONDecoder().decode(TokenResponse.self, from: Data(body.readableBytesView)),
            !token.accessToken.isEmpty
        else {
            throw WNSError(.tokenEndpointUnavailable, "the token endpoint's answer has no access_token")
        }
        return WNSAccessToken(value: token.accessToken, lifetime: token.lifetime)
    }

    static func formEncode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
