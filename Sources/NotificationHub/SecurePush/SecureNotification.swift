import Crypto
import Foundation

/// A secure notification as stored: its payload is sealed, so a copy of the database does not reveal it.
public struct StoredSecureNotification: Sendable, Hashable {
    /// The id that travels through the platforms.
    public var id: String
    /// Who may read it: a tag expression evaluated against the reading user's tags.
    public var audience: String
    /// The payload sealed with AES-256-GCM (nonce, ciphertext and tag), bound to the id.
    public var sealedPayload: Data
    /// When it was created.
    public var createdAt: Date
    /// When it stops being readable.
    public var expiresAt: Date
    /// Whether the first read deletes it.
    public var readOnce: Bool
    /// When it was first read.
    public var readAt: Date?
    /// The notifications that pushed its id (set once they are accepted).
    public var notificationIDs: [String]

    /// Creates a record.
    public init(
        id: String, audience: String, sealedPayload: Data, createdAt: Date, expiresAt: Date, readOnce: Bool,
        readAt: Date? = nil, notificationIDs: [String] = []
    ) {
        self.notificationIDs = notificationIDs
        self.id = id
        self.audience = audience
        self.sealedPayload = sealedPayload
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.readOnce = readOnce
        self.readAt = readAt
    }
}

/// Where a hub keeps secure notifications.
public protocol SecureNotificationStore: Sendable {
    /// Stores a new secure notification.
    func create(_ notification: StoredSecureNotification) async throws

    /// Reads a secure notification that exists and has not expired at `now`.
    func secureNotification(id: String, now: Date) async throws -> StoredSecureNotification?

    /// Records a read. For a read-once notification the row is deleted; returns `false` when it was already gone
    /// (another reader took it first).
    func markRead(id: String, readOnce: Bool, now: Date) async throws -> Bool

    /// Deletes every secure notification that expired before `now`; returns how many.
    @discardableResult
    func purge(expiredBefore now: Date) async throws -> Int

    /// Records the notifications that pushed a secure notification's id.
    func setNotificationIDs(_ notificationIDs: [String], of id: String) async throws
}

extension SecureNotificationStore {
    public func setNotificationIDs(_ notificationIDs: [String], of id: String) async throws {}
}

/// Seals and opens secure payloads with the hub's AES-256-GCM key; the notification id is authenticated with the
/// payload, so a sealed payload cannot be moved to another row.
public struct SecurePayloadSealer: Sendable {
    let key: SymmetricKey

    /// Creates a sealer with a 256-bit key.
    public init(key: SymmetricKey) {
        self.key = key
    }

    /// Encrypts `payload` for the notification `id`.
    public func seal(_ payload: Data, id: String) throws -> Data {
        guard let combined = try AES.GCM.seal(payload, using: key, authenticating: Data(id.utf8)).combined else {
            throw HubError(.storageFailure, "the secure payload could not be sealed")
        }
        return combined
    }

    /// Decrypts a sealed payload of the notification `id`.
    public func open(_ sealed: Data, id: String) throws -> Data {
        do {
            return try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Data(id.utf8))
        } catch {
            throw HubError(
                .storageFailure, "a secure payload could not be decrypted; was securePush.encryptionKey changed?")
        }
    }
}
