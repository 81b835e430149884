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

/// The request context of every route: the operations routes use it as it is; below `/{hub}`,
/// ``HubAuthenticationMiddleware`` records what it proved here, and the hub's routes run on the ``HubContext``
/// made from it.
public struct HubRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// What authentication proved: the hub, the configuration the request runs on, and the caller.
    var authentication: HubAuthentication?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// What ``HubAuthenticationMiddleware`` proved about a request to a hub.
struct HubAuthentication: Sendable {
    var hub: Hub
    /// The hub's configuration when the request was authenticated: the keys that verified it, and what every
    /// handler of the request reads, so a reload never lands between two reads of one request.
    var configuration: HubConfiguration
    var caller: Caller
}

/// The context of the hub's routes (`/{hub}/…`): the hub the path names, one snapshot of its configuration, and
/// the caller, all proved by ``HubAuthenticationMiddleware`` before any handler runs.
public struct HubContext: ChildRequestContext {
    public typealias ParentContext = HubRequestContext

    public var coreContext: CoreRequestContextStorage
    /// The hub the request is for.
    public let hub: Hub
    /// The hub's configuration as it was when the request was authenticated; the whole request uses it.
    public let configuration: HubConfiguration
    /// Who is calling.
    public let caller: Caller

    /// Takes over what authentication proved; a request that reached the hub's routes without it is refused as
    /// an invalid token.
    public init(context: HubRequestContext) throws {
        guard let authentication = context.authentication else { throw SharedAccessSignature.invalid }
        coreContext = context.coreContext
        hub = authentication.hub
        configuration = authentication.configuration
        caller = authentication.caller
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
    public func registrant() throws(APIError) -> Registrant {
        switch caller {
        case .user(let user):
            return .user(user)
        case .key(_, let rights):
            if rights.contains(.manage) { return .unrestricted }
            guard rights.contains(.listen) else { throw APIError.forbidden(.listen) }
            return configuration.listenKey.userBoundTags == .allow ? .unrestricted : .listenKey
        case .anonymous:
            throw APIError.unauthorized(
                "send an Authorization header: a SharedAccessSignature token or, where the hub verifies device tokens, Bearer <the app's user JWT>")
        }
    }

    /// Parses a tag expression under the limits of the request's configuration.
    public func parseExpression(_ text: String) throws(HubError) -> TagExpression {
        try TagExpression(parsing: text, limits: configuration.limits.tagExpression)
    }

    /// The user a bearer token proved, for the device routes.
    public func requireUser() throws(APIError) -> String {
        guard case .user(let user) = caller else {
            throw HubAuthenticationMiddleware.invalidBearer("send Authorization: Bearer <token from the app's identity provider>")
        }
        return user
    }
}

/// Admits a request to the routes behind it only when its caller holds a right (Manage grants every right), or is
/// a device user: the rights of Azure's model, checked once per route group instead of in each handler.
struct CallerRequirement: RouterMiddleware {
    typealias Context = HubContext

    enum Kind: Sendable {
        case right(AccessRight)
        case deviceUser
    }

    let kind: Kind

    static let listen = CallerRequirement(kind: .right(.listen))
    static let send = CallerRequirement(kind: .right(.send))
    static let manage = CallerRequirement(kind: .right(.manage))
    static let deviceUser = CallerRequirement(kind: .deviceUser)

    func handle(
        _ request: Request, context: HubContext, next: (Request, HubContext) async throws -> Response
    ) async throws -> Response {
        switch kind {
        case .right(let right): try context.require(right)
        case .deviceUser: _ = try context.requireUser()
        }
        return try await next(request, context)
    }
}
