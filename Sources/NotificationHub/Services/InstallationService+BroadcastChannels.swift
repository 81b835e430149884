import AdapterKit
import Foundation

/// The rows of broadcast channels: one per tag, of an adapter's ``BroadcastChannelManaging/broadcastPlatform``,
/// whose push channel is the platform's channel id, so that a send to the tag reaches the channel once through the
/// store, tag matching, pruning of expired channels and send pipeline that serve installations.
///
/// A row's id is `/<platform>/<tag>` (e.g. `/apnsbroadcast/match:1234`): the public installation-id policy refuses
/// `/`, so no client reads or writes it through `/installations/{id}`, and one tag has at most one channel. The
/// leading `/` keeps it apart from every installation's sub-resources (``subResourceID(of:_:)``: `{parent}/…`, the
/// parent never empty), so deleting an installation never reaches a channel row. Its push
/// variables hold `environment` and `messageStoragePolicy`.
extension InstallationService {
    /// The row id of a tag's channel on `platform`.
    public static func broadcastChannelRowID(platform: Platform, tag: String) -> String { "/\(platform.name)/\(tag)" }

    /// The channel row of a tag, if one exists and (unless `includeExpired`) its channel has not expired: a channel
    /// the platform no longer knows is marked expired by delivery.
    public func broadcastChannelRow(platform: Platform, tag: String, includeExpired: Bool = false) async throws -> Installation? {
        let id = Self.broadcastChannelRowID(platform: platform, tag: tag)
        guard let row = try await core.installationStore.installation(id: id), row.platform == platform,
            includeExpired || !row.expiredPushChannel
        else { return nil }
        return row
    }

    /// Stores a channel row for `tag` (replacing an expired one). The tag must be a user tag and the platform one an
    /// adapter serves.
    @discardableResult
    public func storeBroadcastChannelRow(
        platform: Platform, tag: String, channel: BroadcastChannel
    ) async throws -> Installation {
        try Tag.validate(tag)
        guard configuration.adapters.adapter(for: platform) != nil else {
            throw HubError(.unknownPlatform, "the platform '\(platform)' is not served by this hub")
        }
        let row = Installation(
            installationID: Self.broadcastChannelRowID(platform: platform, tag: tag), platform: platform,
            pushChannel: .handle(channel.id), tags: [tag],
            pushVariables: [
                "environment": channel.environment, "messageStoragePolicy": String(channel.messageStoragePolicy.rawValue),
            ])
        return try await core.installationStore.upsert(row, as: .unrestricted)
    }

    /// Every channel row of `platform` (expired ones too when `includeExpired`), in store order.
    public func broadcastChannelRows(platform: Platform, includeExpired: Bool = false) async throws -> [Installation] {
        var rows: [Installation] = []
        let query = InstallationQuery(platforms: [platform], includeExpired: includeExpired, kinds: .installations)
        for try await page in core.installationStore.pages(query, pageSize: 500) {
            rows += page.installations.filter { $0.platform == platform }
        }
        return rows
    }

    /// Deletes a tag's channel row; returns whether it existed.
    @discardableResult
    public func deleteBroadcastChannelRow(platform: Platform, tag: String) async throws -> Bool {
        try await core.installationStore.delete(id: Self.broadcastChannelRowID(platform: platform, tag: tag), as: .unrestricted)
    }
}
