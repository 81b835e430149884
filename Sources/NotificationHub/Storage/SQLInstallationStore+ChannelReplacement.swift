import Foundation

extension SQLInstallationStore {
    /// The data of an `installation.channelReplaced` event.
    struct ChannelReplacedData: Encodable {
        var installationId: String
        var platform: String
        var oldPnsHandle: String
        var pnsHandle: String
        var time: String
    }

    /// Applies a canonical channel inside a transaction: an installation that still has the channel the hub
    /// delivered to gets the platform's canonical one instead, and an `installation.channelReplaced` event is written
    /// for the subscribers (``EventOutbox``) in the same transaction.
    static func apply(_ replacement: ChannelReplacement, on connection: any SQLExecutor) async throws {
        let rows = try await connection.query(
            """
            UPDATE installations SET push_channel = ?, channel_is_object = 0, expired = 0, last_update = ?,
                version = version + 1
            WHERE id = ? AND kind = 0 AND push_channel = ? RETURNING rid
            """,
            [
                .text(replacement.canonical), .float(replacement.time.timeIntervalSince1970),
                .text(replacement.installationID), .text(replacement.pushChannel.storageKey),
            ])
        guard !rows.isEmpty else { return }
        let data = ChannelReplacedData(
            installationId: replacement.installationID, platform: replacement.platform.name,
            oldPnsHandle: replacement.pushChannel.storageKey, pnsHandle: replacement.canonical,
            time: HubDateFormat.string(from: replacement.time))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try await EventOutbox.append(
            .channelReplaced, data: String(decoding: try encoder.encode(data), as: UTF8.self), time: replacement.time,
            on: connection)
    }
}
