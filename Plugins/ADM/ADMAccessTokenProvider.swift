import AdapterKit
import Logging

/// An OAuth 2.0 access token for ADM.
public struct ADMAccessToken: Sendable, Hashable {
    /// The bearer token (never logged).
    public var value: String
}

/// Obtains ADM access tokens from Login with Amazon with the client-credentials grant (`grant_type=
/// client_credentials`, `scope=messaging:push`, the security profile's client id and secret), as Amazon's "Request
/// an Access Token" page describes (https://developer.amazon.com/docs/adm/request-access-token.html). The kit's
/// ``ClientCredentialsTokenSource`` caches the token, renews it before it expires and shares one request among
/// concurrent callers; a token ADM calls expired (`AccessTokenExpired`) is dropped with ``invalidate(_:)``.
public final class ADMAccessTokenProvider: Sendable {
    private let source: ClientCredentialsTokenSource

    init(settings: ADMSettings, client: LazyHTTPClient, logger: Logger, clock: any WallClock = SystemWallClock()) {
        source = ClientCredentialsTokenSource(
            grant: ClientCredentialsGrant(
                tokenEndpoint: settings.tokenEndpoint, clientID: settings.clientID, clientSecret: settings.clientSecret,
                scope: ADMSettings.scope),
            http: client, requestTimeout: settings.requestTimeout, renewalMargin: settings.tokenRenewalMargin,
            logger: logger, platform: "adm", clock: clock)
    }

    /// How many token requests were sent (for tests and benchmarks).
    public var requestCount: Int {
        get async { await source.requestCount }
    }

    /// A valid token: the cached one until its renewal time, otherwise a new one.
    /// - Throws: ``ADMError``.
    public func token() async throws(ADMError) -> ADMAccessToken {
        do {
            return ADMAccessToken(value: try await source.token())
        } catch let error as ClientCredentialsError {
            throw ADMError(error)
        } catch {
            throw ADMError(.tokenEndpointUnreachable, "the token request failed: \(type(of: error))")
        }
    }

    /// Drops `token` (ADM answered that it expired), so the next call fetches a new one.
    public func invalidate(_ token: ADMAccessToken) async {
        await source.invalidate(token.value)
    }
}
