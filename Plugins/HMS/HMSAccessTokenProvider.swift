import AdapterKit
import Logging

/// An OAuth 2.0 access token for Push Kit.
public struct HMSAccessToken: Sendable, Hashable {
    /// The bearer token (never logged).
    public var value: String
}

/// Obtains access tokens with the client-credentials grant (`grant_type=client_credentials`, the app id and secret)
/// through the kit's ``ClientCredentialsTokenSource``, which caches them, renews them before they expire, and shares
/// one request among concurrent callers. A token Push Kit calls expired (`80200003`) is dropped with
/// ``invalidate(_:)``.
public final class HMSAccessTokenProvider: Sendable {
    private let source: ClientCredentialsTokenSource

    init(settings: HMSSettings, client: LazyHTTPClient, logger: Logger, clock: any WallClock = SystemWallClock()) {
        source = ClientCredentialsTokenSource(
            grant: ClientCredentialsGrant(
                tokenEndpoint: settings.tokenEndpoint, clientID: settings.appID, clientSecret: settings.clientSecret),
            http: client, requestTimeout: settings.requestTimeout, renewalMargin: settings.tokenRenewalMargin,
            logger: logger, platform: "hms", clock: clock)
    }

    /// How many token requests were sent (for tests and benchmarks).
    public var requestCount: Int {
        get async { await source.requestCount }
    }

    /// A valid token: the cached one until its renewal time, otherwise a new one.
    /// - Throws: ``HMSError``.
    public func token() async throws -> HMSAccessToken {
        do {
            return HMSAccessToken(value: try await source.token())
        } catch let error as ClientCredentialsError {
            switch error.code {
            case .rejected: throw HMSError(.tokenRejected, error.message)
            case .unreachable: throw HMSError(.tokenEndpointUnreachable, error.message)
            default: throw HMSError(.tokenEndpointUnavailable, error.message, retryAfter: error.retryAfter)
            }
        }
    }

    /// Drops `token` (Push Kit answered that it expired), so the next call fetches a new one.
    public func invalidate(_ token: HMSAccessToken) async {
        await source.invalidate(token.value)
    }
}
