import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// An OAuth 2.0 access token for FCM, with its expiry.
public struct FCMAccessToken: Sendable, Hashable {
    /// The bearer token (never logged).
    public var value: String
    /// When the token stops being valid, on the monotonic clock.
    public var expiresAt: ContinuousClock.Instant
}

/// Obtains access tokens with the service account's JWT-bearer grant, caches them, renews them before they expire,
/// and shares one request among concurrent callers (single flight, through the kit's ``TokenCache``).
public final class FCMAccessTokenProvider: Sendable {
    /// The OAuth scope FCM needs.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private let cache: TokenCache<SingleToken, FCMAccessToken>

    /// Creates a provider. Tokens are renewed once less than `renewalMargin` of their lifetime is left.
    init(
        account: FCMServiceAccount, client: LazyHTTPClient, renewalMargin: Duration = .seconds(300),
        requestTimeout: TimeAmount = .seconds(30), logger: Logger
    ) {
        let fetch = Fetcher(account: account, http: client, requestTimeout: requestTimeout, logger: logger)
        self.cache = TokenCache { () async throws -> TokenCache<SingleToken, FCMAccessToken>.Fresh in
            let requested = Date()
            let token = try await fetch.fetch()
            return .init(token.token, refreshAt: requested + (token.lifetime - renewalMargin).secondsValue)
        }
    }

    /// How many token requests were sent (for tests and benchmarks).
    public var requestCount: Int {
        get async { await cache.fetchCount }
    }

    /// A valid token: the cached one while it has more than the renewal margin left, otherwise a new one.
    public func token() async throws -> FCMAccessToken {
        try await cache.token()
    }

    /// Drops `token` from the cache (after the platform answered 401 for it), so the next call fetches a new one.
    public func invalidate(_ token: FCMAccessToken) async {
        await cache.invalidate(token)
    }
}

extension FCMAccessTokenProvider {
    /// How long to use a token whose answer held `expires_in: value`: Google's usual hour when absent or not a
    /// number, otherwise the value clamped between ``PlatformNumber/minimumTokenLifetime`` and
    /// ``PlatformNumber/maximumTokenLifetime``.
    static func lifetime(expiresIn value: JSONValue?) -> Duration {
        var seconds: Double?
        switch value {
        case .number(let number)?: seconds = number
        case .string(let text)?: seconds = PlatformNumber.int64(text).map(Double.init)
        default: seconds = nil
        }
        return PlatformNumber.tokenLifetime(expiresIn: seconds)
    }
}

/// Exchanges a signed assertion for an access token at the service account's token endpoint.
private struct Fetcher: Sendable {
    var account: FCMServiceAccount
    var http: LazyHTTPClient
    var requestTimeout: TimeAmount
    var logger: Logger

    func fetch() async throws -> (token: FCMAccessToken, lifetime: Duration) {
        let assertion: String
        do {
            assertion = try account.assertion(scope: FCMAccessTokenProvider.scope)
        } catch {
            throw FCMError(.invalidServiceAccount, "cannot sign the token assertion with the service account's key")
        }
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(
                string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let started = ContinuousClock.now
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await http.client().execute(request, timeout: requestTimeout)
        } catch {
            logger.warning("token endpoint unreachable", metadata: ["error.type": "\(type(of: error))"])
            throw FCMError(.tokenEndpointUnreachable, "cannot reach the token endpoint: \(type(of: error))")
        }
        body = await response.body.prefix(upTo: 64 * 1024)
        let json = try? JSONValue(parsing: body.readableBytesView).objectValue
        guard response.status == .ok else {
            let reason = json?["error"]?.stringValue ?? "HTTP \(response.status.code)"
            logger.warning(
                "token request refused", metadata: ["oauth.error": .string(reason), "http.status": "\(response.status.code)"])
            if response.status.code >= 500 || response.status == .tooManyRequests {
                throw FCMError(
                    .tokenEndpointUnavailable, "the token endpoint answered \(response.status.code)",
                    retryAfter: RetryAfter.parse(response.headers.first(name: "retry-after")))
            }
            throw FCMError(.tokenRejected, "the token endpoint refused the service account: \(reason)")
        }
        guard let value = json?["access_token"]?.stringValue, !value.isEmpty else {
            throw FCMError(.tokenEndpointUnavailable, "the token endpoint's answer has no access_token")
        }
        let lifetime = FCMAccessTokenProvider.lifetime(expiresIn: json?["expires_in"])
        logger.debug("access token obtained", metadata: ["oauth.expiresIn": "\(lifetime.components.seconds)"])
        return (FCMAccessToken(value: value, expiresAt: started + lifetime), lifetime)
    }
}
