/// Rows the hub writes on behalf of an installation, its sub-resources (a Live Activity's push tokens, for one).
///
/// A sub-resource is stored as an installation, so tag matching, the send pipeline and the pruning of expired
/// channels reach it as they reach any installation, under an id the identifier policy refuses
/// (``subResourceID(of:_:)``: the parent's id, `/`, a path): no client can read or write it through
/// `/installations/{id}`, only through the endpoints that manage it. Each row takes its parent's user (so
/// `$UserId:{user}` matches it) and expiry, and carries `$InstallationId:{parent}` besides its own system tags, so a
/// send to the parent's installation tag in a format the row's platform serves reaches it. Deleting the parent
/// through ``deleteInstallation(id:as:)`` deletes its sub-resources.
extension InstallationService {
    /// The id of a sub-resource of `parent`: `{parent}/{path}`. The identifier policy refuses `/`, so the id is
    /// never an installation's and never one a client can name.
    public static func subResourceID(of parent: String, _ path: String) -> String {
        parent + "/" + path
    }

    /// Validates and stores a sub-resource row of `parent` (create or replace): its user tags follow the tag rules
    /// and the hub's per-installation limit, its push channel its platform's adapter, its push variables (where the
    /// caller may keep the row's own values) their rules; it has no templates, takes the parent's user and expiry,
    /// and carries `$InstallationId:{parent}` and `systemTags` (each a canonical system tag, e.g.
    /// ``SystemTag/activityID(_:)``). The caller has checked that the parent is the registrant's.
    ///
    /// - Throws: ``HubError`` for a tag, push channel or platform the hub refuses; nothing is stored then.
    public func storeSubResource(_ row: Installation, of parent: Installation, systemTags: [String] = []) async throws -> Installation {
        guard row.installationID.hasPrefix(parent.installationID + "/"), row.installationID.utf8.count > parent.installationID.utf8.count + 1
        else {
            throw HubError(.invalidInstallation, "a sub-resource's id is its parent's id, '/', and a path")
        }
        for tag in systemTags where SystemTag.canonical(tag) != tag {
            throw HubError(.invalidTag, "'\(tag.prefix(120))' is not a system tag in its canonical spelling")
        }
        try Tag.validate(row.tags, limit: configuration.limits.tagsPerInstallation)
        try PushVariables.validate(row.pushVariables)
        try configuration.adapters.validate(pushChannel: row.pushChannel, platform: row.platform)
        var stored = row
        stored.userID = parent.userID
        stored.expirationTime = parent.expirationTime
        stored.templates = [:]
        stored.tags = row.tags + [SystemTag.installationID(parent.installationID)] + systemTags
        return try await core.installationStore.upsert(stored, as: .unrestricted)
    }

    /// The sub-resources of installation `parentID` (of `platforms` only, when given), in store order, with the
    /// tags the hub wrote (`$…`) still among their tags.
    public func subResources(of parentID: String, platforms: [Platform]? = nil) async throws -> [Installation] {
        let query = InstallationQuery(
            expression: .tag(SystemTag.installationID(parentID)), platforms: platforms, kinds: .installations)
        var rows: [Installation] = []
        for try await page in core.installationStore.pages(query, pageSize: 100) {
            rows += page.installations.filter { $0.installationID.hasPrefix(parentID + "/") }
        }
        return rows
    }

    /// Deletes one sub-resource row of `parentID`; returns whether it existed.
    @discardableResult
    public func deleteSubResource(id: String, of parentID: String) async throws -> Bool {
        guard id.hasPrefix(parentID + "/") else { return false }
        return try await core.installationStore.delete(id: id, as: .unrestricted)
    }

    /// Deletes every sub-resource of `parentID`; returns how many.
    @discardableResult
    func deleteSubResources(of parentID: String) async throws -> Int {
        var deleted = 0
        for row in try await subResources(of: parentID) {
            if try await core.installationStore.delete(id: row.installationID, as: .unrestricted) { deleted += 1 }
        }
        return deleted
    }
}
