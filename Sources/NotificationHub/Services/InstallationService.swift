import Foundation
import Logging
import ServiceLifecycle

/// A hub's devices: validates, stores, reads and deletes installations on behalf of a ``Registrant``, lists them,
/// and serves the registrations API (`InstallationService+Registrations.swift`) over the same rows.
///
/// Every call reads the hub's configuration current when it starts (its limits, tag rules and adapters).
public struct InstallationService: Sendable {
    let core: HubCore

    init(core: HubCore) {
        self.core = core
    }

    var configuration: HubConfiguration { core.configuration }

    /// Validates and stores an installation (create or replace) on behalf of `registrant` (see ``authorize(_:as:)``).
    public func register(_ installation: Installation, as registrant: Registrant = .unrestricted) async throws -> Installation {
        var installation = installation
        installation.removeImplicitTemplateTags()
        try authorize(&installation, as: registrant)
        try validate(installation)
        return try await core.installationStore.upsert(installation, as: registrant)
    }

    /// Applies a JSON patch to an installation `registrant` reaches and checks the result before storing it.
    public func patch(
        id: String, _ operations: [InstallationPatchOperation], as registrant: Registrant = .unrestricted
    ) async throws -> Installation {
        try await core.installationStore.update(id: id, as: registrant) { [self] installation throws(HubError) in
            try installation.apply(operations)
            installation.removeImplicitTemplateTags()
            try authorize(&installation, as: registrant)
            try validate(installation)
        }
    }

    /// Checks an installation against the hub's rules and its platform's adapter: the identifier policy for its id,
    /// user and template names, the tag rules, a limit on every tag it carries (its own and its templates'), and
    /// the rules for push variables (``PushVariables``).
    public func validate(_ installation: Installation) throws(HubError) {
        try Identifier.validate(installation.installationID, as: .installationID)
        if let user = installation.userID { try Identifier.validate(user, as: .userID) }
        let configuration = self.configuration
        let limit = configuration.limits.tagsPerInstallation
        try Tag.validate(installation.tags, limit: limit)
        try PushVariables.validate(installation.pushVariables)
        try configuration.adapters.validate(pushChannel: installation.pushChannel, platform: installation.platform)
        for (name, template) in installation.templates {
            try Identifier.validate(name, as: .templateName)
            do {
                _ = try Template(parsing: template.body)
                for (header, value) in template.headers {
                    try NotificationHeaders.validate(name: header)
                    _ = try Template(parsing: value, kind: .text)
                }
                if let expiry = template.expiry { _ = try Template(parsing: expiry, kind: .text) }
                try Tag.validate(template.tags, limit: limit)
            } catch {
                throw HubError(error.code, "template '\(name)': \(error.message)")
            }
        }
        let distinct = installation.tags.count + Set(installation.templates.values.flatMap(\.tags)).subtracting(installation.tags).count
        if distinct > limit {
            throw HubError(
                .tooManyTags,
                "an installation may carry at most \(limit) distinct tags, its templates' tags included; \(distinct) were given")
        }
    }

    /// An installation if `registrant` reaches it; `nil` when it does not exist or belongs to someone out of reach,
    /// which callers must not tell apart, and when it has expired (``Installation/expirationTime``) but the sweep
    /// has not deleted it yet.
    public func installation(id: String, as registrant: Registrant) async throws -> Installation? {
        guard let installation = try await core.installationStore.installation(id: id),
            registrant.reaches(owner: installation.userID), !installation.isExpired(at: core.clock.now())
        else { return nil }
        return installation
    }

    /// Deletes every installation whose `expirationTime` has passed; returns how many.
    @discardableResult
    public func deleteExpired() async throws -> Int {
        let now = core.clock.now()
        var total = 0
        while true {
            let deleted = try await core.installationStore.deleteExpired(before: now, limit: Self.expirySweepStep)
            total += deleted
            if deleted < Self.expirySweepStep { return total }
        }
    }

    /// How many expired installations one statement of the sweep deletes.
    static let expirySweepStep = 500

    /// Seconds between sweeps of expired installations.
    public static let expirySweepIntervalSeconds: Double = 60

    /// Deletes expired installations every ``expirySweepIntervalSeconds`` until graceful shutdown, and folds the
    /// installation counters' deltas (``InstallationCounter``). Until the sweep deletes one, an expired installation
    /// is not read back, and template sends skip it.
    func expiryLoop() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(Self.expirySweepIntervalSeconds)) }
                let deleted = try await deleteExpired()
                if deleted > 0 { core.logger.info("deleted expired installations", metadata: ["installations.deleted": "\(deleted)"]) }
                // PostgreSQL's count deltas are folded in even when nobody asks for counts, so their table stays small.
                if let database = core.database { try await InstallationCounter(database: database).fold() }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                core.logger.warning("could not delete expired installations", metadata: ["error": "\(error)"])
            }
        }
    }

    /// How many devices a send to `expression` reaches now: installations and registrations whose channel has not
    /// expired, counted from the tag index (no scan of every installation unless the expression needs one, e.g.
    /// `!muted`).
    public func audienceCount(_ expression: TagExpression) async throws -> Int {
        try await core.installationStore.count(InstallationQuery(expression: expression, includeExpired: false))
    }

    /// Deletes an installation if `registrant` reaches it, and its sub-resources with it
    /// (`InstallationService+SubResources.swift`); returns whether it was deleted.
    @discardableResult
    public func deleteInstallation(id: String, as registrant: Registrant) async throws -> Bool {
        guard try await core.installationStore.delete(id: id, as: registrant) else { return false }
        try await deleteSubResources(of: id)
        return true
    }

    /// A page of installations matching `expression` (all when `nil`).
    public func installations(
        matching expression: TagExpression?, after cursor: InstallationCursor?, limit: Int
    ) async throws -> InstallationPage {
        try await core.installationStore.query(
            InstallationQuery(expression: expression, kinds: .installations), after: cursor, limit: limit)
    }

    /// A user's tag set: `username:<user>`, the user's tag in every other user-bound namespace (`user:<user>`),
    /// `$UserId:{user}` and the tags of every installation of the user.
    public func tags(ofUser user: String) async throws -> Set<String> {
        let userTag = SystemTag.userID(user)
        var tags: Set<String> = ["username:\(user)", userTag]
        tags.formUnion(configuration.userBoundTags.tags(of: user))
        for try await page in core.installationStore.pages(InstallationQuery(expression: .tag(userTag)), pageSize: 100) {
            for installation in page.installations { tags.formUnion(installation.tags) }
        }
        return tags
    }
}
