import Crypto
import Foundation
import NotificationHub

/// The query token of a hub's blob-container URLs, in the shape of an Azure Storage service SAS
/// (`sv=…&sr=c&sp=rl&se=2026-11-28T10:00:00Z&sig=…`), so Azure's storage clients carry it unchanged.
///
/// The signature is HMAC-SHA256 over `notification-hub-container`, the hub's name, the container's name, the
/// permissions and the expiry, one per line, keyed with a key of the hub that has the Manage right (its primary key
/// signs; the primary and secondary keys of every Manage key verify). A token therefore opens one container of one
/// hub, until it expires or the key is rotated out.
public struct ContainerSignature: Sendable, Hashable {
    /// What a token allows: `r` read blobs, `w` write blobs, `l` list the container.
    public struct Permissions: OptionSet, Sendable, Hashable {
        /// The permission bits.
        public let rawValue: Int
        /// Permissions from their bits.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Read a blob.
        public static let read = Permissions(rawValue: 1)
        /// Write a blob.
        public static let write = Permissions(rawValue: 2)
        /// List the container.
        public static let list = Permissions(rawValue: 4)

        static let letters: [(Character, Permissions)] = [("r", .read), ("w", .write), ("l", .list)]

        /// The letters Azure writes in `sp`, in Azure's order.
        public var text: String { String(Self.letters.filter { contains($0.1) }.map { $0.0 }) }

        init?(text: String) {
            var value: Permissions = []
            for character in text {
                guard let entry = Self.letters.first(where: { $0.0 == character }) else { return nil }
                value.insert(entry.1)
            }
            self = value
        }
    }

    /// The storage service version the token claims, as Azure's clients expect one.
    static let version = "2019-02-02"

    /// The hub's name.
    public var hub: String
    /// The container's name.
    public var container: String
    /// What the token allows.
    public var permissions: Permissions
    /// When it stops working.
    public var expiry: Date

    /// Creates the description of a token.
    public init(hub: String, container: String, permissions: Permissions, expiry: Date) {
        self.hub = hub
        self.container = container
        self.permissions = permissions
        // Whole seconds: the text form carries no fraction.
        self.expiry = Date(timeIntervalSince1970: expiry.timeIntervalSince1970.rounded(.down))
    }

    /// The signing keys of a hub: the primary, then the secondary key, of every key with the Manage right.
    static func signingKeys(_ keys: [AccessKey]) -> [String] {
        keys.filter { $0.rights.contains(.manage) }.flatMap { [$0.primaryKey, $0.secondaryKey].compactMap { $0 } }
    }

    static func expiryText(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: false).format(date)
    }

    func signature(key: String) -> String {
        let text = ["notification-hub-container", hub, container, permissions.text, Self.expiryText(expiry)]
            .joined(separator: "\n")
        let mac = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: Data(key.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// The query string (without `?`), signed with the hub's first Manage key; `nil` when the hub has none.
    public func query(keys: [AccessKey]) -> String? {
        guard let key = Self.signingKeys(keys).first else { return nil }
        let encode = SharedAccessSignature.percentEncode
        return "sv=\(Self.version)&sr=c&sp=\(permissions.text)&se=\(encode(Self.expiryText(expiry)))"
            + "&sig=\(encode(signature(key: key)))"
    }

    /// Why a token was refused; never holds the token.
    public struct Failure: Error, Sendable, Hashable {
        /// What to tell the caller.
        public var message: String
    }

    /// Reads and checks the token in a query string for a container of a hub, requiring `needed`.
    ///
    /// - Throws: ``Failure`` for a missing, malformed, expired or tampered token, one for another container or hub,
    ///   or one that does not allow `needed`.
    public static func verify(
        query: String, hub: String, container: String, needed: Permissions, keys: [AccessKey], now: Date
    ) throws(Failure) -> ContainerSignature {
        var fields: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].lowercased()
            let raw = parts.count > 1 ? String(parts[1]) : ""
            fields[name] = raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
        }
        guard let signature = fields["sig"], let expiryText = fields["se"], let permissionText = fields["sp"] else {
            throw Failure(message: "the URL needs the container token the hub issued (sp, se and sig)")
        }
        guard fields["sr"] == nil || fields["sr"] == "c" else {
            throw Failure(message: "the token must be a container token (sr=c)")
        }
        guard let permissions = Permissions(text: permissionText),
            let expiry = try? Date.ISO8601FormatStyle().parse(expiryText)
        else { throw Failure(message: "the container token is malformed") }
        guard expiry > now else { throw Failure(message: "the container token expired; ask the hub for a new URL") }
        let token = ContainerSignature(hub: hub, container: container, permissions: permissions, expiry: expiry)
        let valid = signingKeys(keys).contains {
            SharedAccessSignature.constantTimeEquals(token.signature(key: $0), signature)
        }
        guard valid else { throw Failure(message: "the container token is not valid for this container") }
        guard permissions.isSuperset(of: needed) else {
            throw Failure(message: "the container token does not allow this operation (it allows '\(permissions.text)')")
        }
        return token
    }
}
