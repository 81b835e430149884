/// How the FCM adapter addresses an `fcmv1` installation's handle: as a registration token (`message.token`), as a
/// Firebase installation ID (`message.fid`), or by the handle's form (``automatic``).
///
/// A Firebase installation ID (FID) is 22 characters of URL-safe base64 (`A-Z a-z 0-9 - _`) whose first 4 bits are
/// `0111`, so its first character is `c`, `d`, `e` or `f`. Registration tokens are much longer and contain `:`.
/// `gcm` installations always use tokens (the legacy format has no FIDs).
public enum FCMTarget: String, Sendable, Hashable, CaseIterable {
    /// Every handle is a registration token.
    case token
    /// Every handle is a Firebase installation ID.
    case fid
    /// A handle of 22 URL-safe base64 characters without `:` is a FID; any other handle is a registration token.
    case automatic

    /// How one handle is sent.
    public enum Kind: String, Sendable, Hashable {
        /// As `message.token`.
        case token
        /// As `message.fid`.
        case fid
    }

    /// The length of every Firebase installation ID.
    public static let fidLength = 22

    /// The rule a FID follows, as told to a client whose handle breaks it.
    public static let fidRule =
        "a Firebase installation ID is 22 characters of URL-safe base64 (A-Z, a-z, 0-9, '-', '_') starting with c, d, e or f"

    /// Whether `handle` has the form of a Firebase installation ID.
    public static func isFID(_ handle: String) -> Bool {
        guard handle.utf8.count == fidLength, let first = handle.utf8.first else { return false }
        return (UInt8(ascii: "c")...UInt8(ascii: "f")).contains(first) && handle.utf8.allSatisfy(isBase64URL)
    }

    /// Whether `handle` is shaped like a FID by length and alphabet (whatever its first character), so that
    /// ``automatic`` judges it by the FID rule.
    static func looksLikeFID(_ handle: String) -> Bool {
        handle.utf8.count == fidLength && handle.utf8.allSatisfy(isBase64URL)
    }

    static func isBase64URL(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    /// How `handle` is sent under this setting, or `nil` when the handle must be a FID and is not one (a ``fid``
    /// setting, or a FID-shaped handle under ``automatic`` whose first character is not `c`–`f`).
    public func kind(of handle: String) -> Kind? {
        switch self {
        case .token: .token
        case .fid: Self.isFID(handle) ? .fid : nil
        case .automatic: Self.looksLikeFID(handle) ? (Self.isFID(handle) ? .fid : nil) : .token
        }
    }
}
