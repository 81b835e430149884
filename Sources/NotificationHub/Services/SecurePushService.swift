import Foundation
import Logging
import ServiceLifecycle

/// A hub's secure push: keeps sealed payloads in the hub, announces their ids through the ``SendService``, hands a
/// payload to a user its audience includes, and purges expired ones.
public struct SecurePushService: Sendable {
    let core: HubCore
    let sends: SendService
    let installations: InstallationService

    init(core: HubCore, sends: SendService, installations: InstallationService) {
        self.core = core
        self.sends = sends
        self.installations = installations
    }

    /// What creating a secure notification produced.
    public struct SecureSend: Sendable {
        /// The secure notification's id (what travels through the platforms).
        public var id: String
        /// The id-only notifications enqueued for it, one per native format the hub serves.
        public var notificationIDs: [String]
        /// When it stops being readable.
        public var expiresAt: Date
    }

    /// The secure-push settings of `configuration`, or the error that says secure push is off.
    func securePushSettings(of configuration: HubConfiguration) throws(HubError) -> SecurePushConfiguration {
        guard let settings = configuration.securePush else {
            throw HubError(
                .securePushDisabled,
                "secure push is not configured for hub '\(configuration.name)'; add a securePush section to hub.yaml")
        }
        return settings
    }

    /// Stores a secure payload (sealed) and announces its id to every installation the audience matches, on every
    /// platform, through the normal delivery path. The payload never leaves the hub in a push.
    public func createSecureNotification(
        payload: Data, audience: TagExpression, timeToLiveSeconds: Double?, readOnce: Bool
    ) async throws -> SecureSend {
        let configuration = core.configuration
        let settings = try securePushSettings(of: configuration)
        let ttl = timeToLiveSeconds ?? settings.defaultTimeToLiveSeconds
        guard ttl > 0, ttl <= settings.maximumTimeToLiveSeconds else {
            throw HubError(
                .invalidNotification,
                "timeToLiveSeconds must be greater than 0 and at most \(Int(settings.maximumTimeToLiveSeconds))")
        }
        let now = core.clock.now()
        let id = UUID().uuidString.lowercased()
        let sealed = try SecurePayloadSealer(key: settings.encryptionKey).seal(payload, id: id)
        let expiresAt = now + ttl
        try await core.secureNotificationStore.create(
            StoredSecureNotification(
                id: id, audience: audience.description, sealedPayload: sealed, createdAt: now, expiresAt: expiresAt,
                readOnce: readOnce))
        var notificationIDs: [String] = []
        let request = SecureAnnouncementRequest(id: id, alertText: settings.announcementStyle == .alert ? settings.alertText : nil)
        for announcement in configuration.adapters.secureAnnouncements(for: request) {
            var headers = announcement.headers
            headers["ServiceBusNotification-Expiry"] = HubDateFormat.string(from: expiresAt)
            let notification = Notification(
                format: announcement.format, body: announcement.body, headers: headers, audience: .tags(audience), createdAt: now)
            notificationIDs.append(try await sends.enqueue(notification))
        }
        try await core.secureNotificationStore.setNotificationIDs(notificationIDs, of: id)
        return SecureSend(id: id, notificationIDs: notificationIDs, expiresAt: expiresAt)
    }

    /// The payload of a secure notification if `user` may read it now, marking it read (deleting a read-once
    /// notification). `nil` for a notification that does not exist, expired, was already read once, or whose
    /// audience does not include the user: callers must not tell these apart.
    public func readSecureNotification(id: String, user: String) async throws -> (payload: Data, createdAt: Date)? {
        try await readSecureNotificationAndSenders(id: id, user: user).map { ($0.payload, $0.createdAt) }
    }

    /// As ``readSecureNotification(id:user:)``, with the ids of the notifications that pushed it.
    public func readSecureNotificationAndSenders(
        id: String, user: String
    ) async throws -> (payload: Data, createdAt: Date, notificationIDs: [String])? {
        let settings = try securePushSettings(of: core.configuration)
        let now = core.clock.now()
        let store = core.secureNotificationStore
        guard let stored = try await store.secureNotification(id: id, now: now) else { return nil }
        let audience = try TagExpression(
            parsing: stored.audience, limits: .init(maximumTagsOrOnly: .max, maximumTags: .max, maximumDepth: 1024))
        guard audience.matches(try await installations.tags(ofUser: user)) else { return nil }
        guard try await store.markRead(id: id, readOnce: stored.readOnce, now: now) else { return nil }
        return (
            try SecurePayloadSealer(key: settings.encryptionKey).open(stored.sealedPayload, id: id), stored.createdAt,
            stored.notificationIDs
        )
    }


    /// Deletes expired secure notifications; returns how many.
    @discardableResult
    public func purgeExpired() async throws -> Int {
        try await core.secureNotificationStore.purge(expiredBefore: core.clock.now())
    }

    /// Purges expired secure notifications periodically, while secure push is configured, until graceful shutdown.
    func purgeLoop() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let interval = core.configuration.securePush?.purgeIntervalSeconds ?? 60
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) }
                guard core.configuration.securePush != nil else { continue }
                let purged = try await purgeExpired()
                if purged > 0 { core.logger.info("purged expired secure notifications", metadata: ["count": "\(purged)"]) }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                core.logger.warning("could not purge secure notifications", metadata: ["error": "\(error)"])
            }
        }
    }
}
