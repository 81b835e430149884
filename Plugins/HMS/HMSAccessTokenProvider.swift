import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// An OAuth 2.0 access token for Push Kit.
public struct HMSAccessToken: Sendable, Hashable {
    /// The bearer token (never logged).
    public var value: String
}

/// Obtains access tokens with the client-credentials grant (`grant_type=client_credentials`, the app id and secret),
/// caches them, renews them before they expire, and shares one request among concurrent callers (the kit's
/// ``TokenCache``). A token Push Kit calls expired (`80200003`) is dropped with ``invalidate(_:)``.
public final class HMSAccessTokenProvider: Sendable {
    private let cache: TokenCache<SingleToken, HMSAccessToken>

    init(settings: HMSSettings, client: LazyHTTPClient, logger: Logger, clock: any WallClock = SystemWallClock()) {
        let fetcher = HMSTokenFetcher(settings: settings, http: client, logger: logger)
        let margin = settings.tokenRenewalMargin
        cache = TokenCache(clock: clock) { () async throws -> TokenCache<SingleToken, HMSAccessToken>.Fresh in
            let requested = clock.now()
            let (token, lifetime) = try await fetcher.fetch()
            return .init(token, refreshAt: requested + max(lifetime - margin, lifetime / 2).secondsValue)
        }
    }

    /// How many token requests were sent (for tests and benchmarks).
    public var requestCount: Int {
        get async { await cache.fetchCount }
    }

    /// A valid token: the cached one until its renewal time, otherwise a new one.
    public func token() async throws -> HMSAccessToken {
        try await cache.token()
    }

    /// Drops `token` (Push Kit answered that it expired), so the next call fetches a new one.
    public func invalidate(_ token: HMSAccessToken) async {
        await cache.invalidate(token)
    }
}

/// Exchanges the app id and secret for an access token at Huawei's OAuth endpoint.
private struct HMSTokenFetcher: Sendable {
    var settings: HMSSettings
    var http: LazyHTTPClient
    var logger: Logger

    func fetch() async throws -> (HMSAccessToken, Duration) {
        var request = HTTPClientRequest(url: settings.tokenEndpoint)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let form = [
            ("grant_type", "client_credentials"), ("client_id", settings.appID), ("client_secret", settings.clientSecret),
        ].map { "\($0.0)=\(Self.formEncode($0.1))" }.joined(separator: "&")
        request.body = .bytes(ByteBuffer(string: form))
        let response: HTTPClientResponse
        do {
            response = try await http.client().execute(request, timeout: settings.requestTimeout.timeAmount)
        } catch {
            logger.warning("HMS token endpoint unreachable", metadata: ["error.type": "\(type(of: error))"])
            throw HMSError(.tokenEndpointUnreachable, "cannot reach the token endpoint: \(type(of: error))")
        }
        let body = await response.body.prefix(upTo: 64 * 1024)
        let json = try? JSONValue(parsing: body.readableBytesView).objectValue
        guard response.status == .ok else {
            let status = Int(response.status.code)
            let description = json?["error_description"]?.stringValue.map { String($0.prefix(80)) } ?? "HTTP \(status)"
            logger.warning("HMS token request refused", metadata: ["http.status": "\(status)", "oauth.error": "\(description)"])
            if status >= 500 || status == 429 {
                throw HMSError(
                    .tokenEndpointUnavailable, "the token endpoint answered \(status)",
                    retryAfter: RetryAfter.parse(response.headers.first(name: "retry-after")))
            }
            throw HMSError(.tokenRejected, "the token endpoint refused the app id and secret: \(description)")
        }
        guard let value = json?["access_token"]?.stringValue, !value.isEmpty else {
            throw HMSError(.tokenEndpointUnavailable, "the token endpoint's answer has no access_token")
        }
        var seconds: Double?
        switch json?["expires_in"] {
        case .number(let number)?: seconds = number
        case .string(let text)?: seconds = PlatformNumber.int64(text).map(Double.init)
        default: seconds = nil
        }
        return (HMSAccessToken(value: value), PlatformNumber.tokenLifetime(expiresIn: seconds))
    }

    /// `application/x-www-form-urlencoded` escaping of one value.
    static func formEncode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._*")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
