import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// The OAuth 2.0 client-credentials grant (RFC 6749 §4.4) of one client at one token endpoint: what an adapter
/// needs to ask for an access token with a client id and secret.
///
/// The secret is part of the value: never log or print it.
public struct ClientCredentialsGrant: Sendable, Equatable {
    /// The token endpoint's URL.
    public var tokenEndpoint: String
    /// The `client_id`.
    public var clientID: String
    /// The `client_secret` (never logged).
    public var clientSecret: String
    /// The `scope`, when the endpoint wants one (e.g. Amazon's `messaging:push`).
    public var scope: String?

    /// Creates a grant.
    public init(tokenEndpoint: String, clientID: String, clientSecret: String, scope: String? = nil) {
        self.tokenEndpoint = tokenEndpoint
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.scope = scope
    }

    /// The `application/x-www-form-urlencoded` request body.
    public var formBody: String {
        var fields = [("grant_type", "client_credentials"), ("client_id", clientID), ("client_secret", clientSecret)]
        if let scope { fields.append(("scope", scope)) }
        return fields.map { "\($0.0)=\(Self.formEncode($0.1))" }.joined(separator: "&")
    }

    /// `application/x-www-form-urlencoded` escaping of one value: everything but letters, digits and `-._~` is
    /// percent-encoded.
    public static func formEncode(_ value: String) -> String {
        var allowed = CharacterSet()
        allowed.insert(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}

/// Why a client-credentials token request failed. Carries no secret.
public struct ClientCredentialsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let rawValue: String
        public var description: String { rawValue }

        /// The endpoint refused the client id, secret or scope (a 4xx other than 429).
        public static let rejected = Code(rawValue: "rejected")
        /// The endpoint failed (429, 5xx) or answered without an access token.
        public static let unavailable = Code(rawValue: "unavailable")
        /// The endpoint could not be reached.
        public static let unreachable = Code(rawValue: "unreachable")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, without secrets.
    public var message: String
    /// How long the endpoint asked to wait, if it did.
    public var retryAfter: Duration?

    /// Creates an error.
    public init(_ code: Code, _ message: String, retryAfter: Duration? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code): \(message)" }
}

/// Access tokens from a ``ClientCredentialsGrant``, cached and shared: one request for concurrent callers, the
/// token kept until `renewalMargin` before it expires (never past half its lifetime), and dropped with
/// ``invalidate(_:)`` when the platform calls it expired.
///
/// ```swift
/// let tokens = ClientCredentialsTokenSource(
///     grant: ClientCredentialsGrant(tokenEndpoint: url, clientID: id, clientSecret: secret, scope: "messaging:push"),
///     http: http, requestTimeout: .seconds(30), renewalMargin: .seconds(300), logger: logger, platform: "adm")
/// let bearer = try await tokens.token()     // throws ClientCredentialsError
/// ```
public final class ClientCredentialsTokenSource: Sendable {
    private let cache: TokenCache<SingleToken, String>

    /// Creates a source; nothing is requested before the first ``token()``. `platform` names the platform in log
    /// lines (`push.platform`).
    public init(
        grant: ClientCredentialsGrant, http: LazyHTTPClient, requestTimeout: Duration, renewalMargin: Duration,
        logger: Logger, platform: String, clock: any WallClock = SystemWallClock()
    ) {
        cache = TokenCache(clock: clock) { () async throws -> TokenCache<SingleToken, String>.Fresh in
            let requested = clock.now()
            let (token, lifetime) = try await Self.request(
                grant, http: http, timeout: requestTimeout, logger: logger, platform: platform)
            return .init(token, refreshAt: requested + max(lifetime - renewalMargin, lifetime / 2).secondsValue)
        }
    }

    /// How many token requests were started (for tests and benchmarks).
    public var requestCount: Int {
        get async { await cache.fetchCount }
    }

    /// A valid access token: the cached one until its renewal time, otherwise a new one.
    /// - Throws: ``ClientCredentialsError``.
    public func token() async throws -> String {
        try await cache.token()
    }

    /// Drops `token` (the platform called it expired), unless a newer one already replaced it.
    public func invalidate(_ token: String) async {
        await cache.invalidate(token)
    }

    /// Asks the endpoint for a token: the token and its lifetime (from `expires_in`, a number or a string of
    /// digits, checked with ``PlatformNumber/tokenLifetime(expiresIn:default:bounds:)``).
    /// - Throws: ``ClientCredentialsError``: `rejected` for a 4xx but 429, `unavailable` for 429 and 5xx (with
    ///   `Retry-After`) or an answer without `access_token`, `unreachable` when no answer came.
    public static func request(
        _ grant: ClientCredentialsGrant, http: LazyHTTPClient, timeout: Duration, logger: Logger, platform: String
    ) async throws(ClientCredentialsError) -> (token: String, lifetime: Duration) {
        var request = HTTPClientRequest(url: grant.tokenEndpoint)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded;charset=UTF-8")
        request.headers.add(name: "accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: grant.formBody))
        let response: HTTPClientResponse
        do {
            response = try await http.client().execute(request, timeout: timeout.timeAmount)
        } catch {
            logger.warning(
                "token endpoint unreachable", metadata: ["push.platform": "\(platform)", "error.type": "\(type(of: error))"])
            throw ClientCredentialsError(.unreachable, "cannot reach the token endpoint: \(type(of: error))")
        }
        let body = await response.body.prefix(upTo: 64 * 1024)
        let json = try? JSONValue(parsing: Array(body.readableBytesView)).objectValue
        let status = Int(response.status.code)
        guard status == 200 else {
            // `error` is a registered OAuth code (RFC 6749 §5.2); the description is the endpoint's text, shortened.
            let code = json?["error"]?.stringValue.map { String($0.prefix(40)) }
            let detail = json?["error_description"]?.stringValue.map { String($0.prefix(80)) }
            let reason = [code, detail].compactMap { $0 }.joined(separator: ": ")
            logger.warning(
                "token request refused",
                metadata: ["push.platform": "\(platform)", "http.status": "\(status)", "oauth.error": "\(code ?? "none")"])
            let message = "the token endpoint answered \(status)" + (reason.isEmpty ? "" : " (\(reason))")
            if status >= 500 || status == 429 {
                throw ClientCredentialsError(
                    .unavailable, message, retryAfter: RetryAfter.parse(response.headers.first(name: "retry-after")))
            }
            throw ClientCredentialsError(.rejected, message)
        }
        guard let token = json?["access_token"]?.stringValue, !token.isEmpty else {
            throw ClientCredentialsError(.unavailable, "the token endpoint's answer has no access_token")
        }
        var seconds: Double?
        switch json?["expires_in"] {
        case .number(let number)?: seconds = number
        case .string(let text)?: seconds = PlatformNumber.int64(text).map(Double.init)
        default: seconds = nil
        }
        return (token, PlatformNumber.tokenLifetime(expiresIn: seconds))
    }
}
