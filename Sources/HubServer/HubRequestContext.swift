import Hummingbird
import Logging
import NotificationHub

/// Who made a request, as its `Authorization` header proved.
public enum Caller: Sendable, Hashable {
    /// No credentials (only the operations routes accept this).
    case anonymous
    /// A SharedAccessSignature token signed with the named key, granting its rights.
    case key(name: String, rights: Set<AccessRight>)
    /// A device app's user, proved by a bearer JWT from the app's identity provider.
    case user(String)
}

/// The request context of the hub's API: the hub the path names and the caller, both set by
/// ``HubAuthenticationMiddleware`` before any handler of the hub's routes runs.
public struct HubRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The hub the request is for (set on the hub's routes).
    public var hub: Hub?
    /// Who is calling.
    public var caller: Caller = .anonymous

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    /// The hub, for handlers on the hub's routes.
    public func requireHub() throws(APIError) -> Hub {
        guard let hub else { throw SharedAccessSignature.invalid }
        return hub
    }

    /// Checks that the caller holds `right` through a SharedAccessSignature key (Manage grants every right).
    public func require(_ right: AccessRight) throws(APIError) {
        switch caller {
        case .key(_, let rights):
            guard rights.contains(right) || rights.contains(.manage) else { throw APIError.forbidden(right) }
        case .user:
            throw APIError(
                .forbidden, code: "Forbidden",
                message: "this operation needs a SharedAccessSignature token with the \(right.rawValue) right, not a device user's token")
        case .anonymous:
            throw APIError.unauthorized("send an Authorization: SharedAccessSignature header (see `hub token`)")
        }
    }

    /// On whose behalf installations and registrations are written and read: a device user's bearer token, or a
    /// key with Listen. A key with Manage is unrestricted; a Listen key is unrestricted too unless the hub's
    /// `listenKey.userBoundTags` is `deny`.
    public func registrant(for hub: Hub) throws(APIError) -> Registrant {
        switch caller {
        case .user(let user):
            return .user(user)
        case .key(_, let rights):
            if rights.contains(.manage) { return .unrestricted }
            guard rights.contains(.listen) else { throw APIError.forbidden(.listen) }
            return hub.configuration.listenKey.userBoundTags == .allow ? .unrestricted : .listenKey
        case .anonymous:
            throw APIError.unauthorized(
                "send an Authorization header: a SharedAccessSignature token or, where the hub verifies device tokens, Bearer <the app's user JWT>")
        }
    }

    /// The user a bearer token proved, for the device routes.
    public func requireUser() throws(APIError) -> String {
        guard case .user(let user) = caller else {
            throw HubAuthenticationMiddleware.invalidBearer("send Authorization: Bearer <token from the app's identity provider>")
        }
        return user
    }
}
