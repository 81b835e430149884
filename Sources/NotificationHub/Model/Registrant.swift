/// On whose behalf an installation or registration is written or read: what the request may say (user id,
/// user-bound tags) and which rows it may reach.
///
/// A row belongs to a user when its `userId` is set (for a registration: when a user's token wrote it). A
/// registrant that does not reach a row sees it as absent, so another user's installation ids cannot be told
/// apart from ids that do not exist.
public enum Registrant: Sendable, Hashable {
    /// A key with Manage, or a Listen key where the hub's ``ListenKeyPolicy`` allows user-bound tags: any user id,
    /// any tag, every row (Azure's model).
    case unrestricted
    /// A Listen key where the hub's ``ListenKeyPolicy`` denies user-bound tags: no user id, no user-bound tag, and
    /// only rows that belong to no user.
    case listenKey
    /// A device app's user, proved by a bearer token: the user id is the token's, user-bound tags must name that
    /// user, and only rows that belong to no user or to this user are reached. Writing a row that belongs to no user
    /// makes it this user's.
    case user(String)

    /// The user a written row will belong to: the token's user, or `nil` when the request names none itself.
    public var user: String? {
        if case .user(let user) = self { user } else { nil }
    }

    /// Whether the registrant may reach a row that belongs to `owner` (`nil`: to no user).
    public func reaches(owner: String?) -> Bool {
        switch self {
        case .unrestricted: true
        case .listenKey: owner == nil
        case .user(let user): owner == nil || owner.map { $0.utf8.elementsEqual(user.utf8) } == true
        }
    }
}

extension HubError.Code {
    /// A device user's request names another user: a `userId` or a user-bound tag (`username:…`) that is not the
    /// token's user.
    public static let userMismatch = HubError.Code("UserMismatch")
    /// The Listen key tried to bind a device to a user where the hub's policy keeps that to the user's own token.
    public static let userTokenRequired = HubError.Code("UserTokenRequired")
}
