/// What a registrant may say and reach: a device user's token binds what it writes to its user, and the Listen key
/// binds nothing to a user where the hub's ``ListenKeyPolicy`` says so (see `docs/registering-devices.md`).
extension InstallationService {
    /// Checks what `registrant` may write into an installation, and sets the installation's user from a user's
    /// token.
    ///
    /// - A user's token: a `userId` other than the token's user is refused, and the installation gets the token's
    ///   user (so `$UserId:{…}` is always that user); every user-bound tag (its own and its templates', template
    ///   names included) must name that user.
    /// - The Listen key under `listenKey.userBoundTags: deny`: no `userId` and no user-bound tag.
    /// - Otherwise anything goes, as in Azure.
    ///
    /// - Throws: ``HubError/Code/userMismatch`` or ``HubError/Code/userTokenRequired`` (403).
    public func authorize(_ installation: inout Installation, as registrant: Registrant) throws(HubError) {
        // A template's name is one of its tags (``InstallationTemplate/implicitTag(name:)``), so it is checked too.
        let tags =
            installation.tags
            + installation.templates.keys.sorted().flatMap { installation.templates[$0]?.routingTags(name: $0) ?? [] }
        switch registrant {
        case .unrestricted:
            return
        case .listenKey:
            if installation.userID != nil {
                throw HubError(
                    .userTokenRequired,
                    "userId binds the installation to a user, which this hub's Listen key may not do (listenKey.userBoundTags: deny); register with the user's token (Authorization: Bearer <the app's user JWT>) or from your backend")
            }
            try refuseUserBoundTags(in: tags)
        case .user(let user):
            if let given = installation.userID, !given.utf8.elementsEqual(user.utf8) {
                throw HubError(
                    .userMismatch,
                    "userId '\(given.prefix(256))' is not the user of the bearer token; leave userId out (the hub sets it from the token) or give the token's user")
            }
            installation.userID = user
            try requireOwnTags(tags, user: user)
        }
    }

    /// Checks what `registrant` may write into a registration: its tags, by the rules of ``authorize(_:as:)``.
    public func authorize(_ registration: Registration, as registrant: Registrant) throws(HubError) {
        switch registrant {
        case .unrestricted: return
        case .listenKey: try refuseUserBoundTags(in: registration.tags)
        case .user(let user): try requireOwnTags(registration.tags, user: user)
        }
    }

    /// Refuses the first user-bound tag: the Listen key's policy keeps them to the user's token.
    private func refuseUserBoundTags(in tags: [String]) throws(HubError) {
        let namespaces = configuration.userBoundTags
        guard let tag = namespaces.firstForeignTag(in: tags, user: nil) else { return }
        throw HubError(
            .userTokenRequired,
            "tag '\(tag)' names a user (prefix '\(namespaces.prefix(of: tag) ?? "")'), which this hub's Listen key may not register (listenKey.userBoundTags: deny); register the device with the user's token (Authorization: Bearer <the app's user JWT>) or from your backend")
    }

    /// Refuses the first user-bound tag that names someone other than `user`.
    private func requireOwnTags(_ tags: [String], user: String) throws(HubError) {
        let namespaces = configuration.userBoundTags
        guard let tag = namespaces.firstForeignTag(in: tags, user: user) else { return }
        let prefixes = namespaces.prefixes.map { "'\($0)'" }.joined(separator: " or ")
        let own = namespaces.prefixes.map { "'\($0)\(user.prefix(256))'" }.joined(separator: " or ")
        throw HubError(
            .userMismatch,
            "tag '\(tag)' names another user; with a user's token, tags starting with \(prefixes) must name that user (\(own))")
    }
}
