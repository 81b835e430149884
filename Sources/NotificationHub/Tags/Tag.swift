/// Tag rules: a user tag is 1–120 characters of `[A-Za-z0-9_@#.:-]`; tags starting with `$` are reserved for the
/// hub's system tags.
public enum Tag {
    /// The longest tag allowed.
    public static let maximumLength = 120

    /// Whether `character` may appear in a user tag.
    @inlinable
    public static func isTagCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"),
            UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// Checks one user tag.
    public static func validate(_ tag: String) throws(HubError) {
        if tag.isEmpty {
            throw HubError(.invalidTag, "a tag must not be empty")
        }
        if tag.utf8.count > maximumLength {
            throw HubError(.invalidTag, "tag '\(tag.prefix(40))…' is longer than \(maximumLength) characters")
        }
        if tag.hasPrefix("$") {
            throw HubError(.invalidTag, "tag '\(tag)' starts with '$', which is reserved for system tags")
        }
        if let bad = tag.unicodeScalars.first(where: { !$0.isASCII || !isTagCharacter(UInt8($0.value)) }) {
            throw HubError(
                .invalidTag,
                "tag '\(tag)' contains '\(bad)'; tags may contain only letters, digits and _ @ # . : -")
        }
    }

    /// Checks a list of user tags against the rules and a per-installation limit.
    public static func validate(_ tags: [String], limit: Int) throws(HubError) {
        if tags.count > limit {
            throw HubError(.tooManyTags, "an installation may carry at most \(limit) tags; \(tags.count) were given")
        }
        for tag in tags { try validate(tag) }
    }
}

/// The hub's system tags, which every installation carries implicitly.
public enum SystemTag {
    /// `$InstallationId:{id}`.
    public static func installationID(_ id: String) -> String { "$InstallationId:{\(id)}" }
    /// `$UserId:{user}`.
    public static func userID(_ id: String) -> String { "$UserId:{\(id)}" }
    /// `$ActivityId:{id}`: carried by the row of one Live Activity's update token (`apnsactivity`), so a send can
    /// name the activity.
    public static func activityID(_ id: String) -> String { "$ActivityId:{\(id)}" }

    /// Brings a system tag into its canonical braced spelling: `$installationid:abc` becomes
    /// `$InstallationId:{abc}`. Returns `nil` when `tag` is not a known system tag.
    public static func canonical(_ tag: String) -> String? {
        guard tag.hasPrefix("$"), let colon = tag.firstIndex(of: ":") else { return nil }
        let name = tag[tag.index(after: tag.startIndex)..<colon].lowercased()
        var value = tag[tag.index(after: colon)...]
        if value.hasPrefix("{") && value.hasSuffix("}") && value.count >= 2 {
            value = value.dropFirst().dropLast()
        }
        guard !value.isEmpty else { return nil }
        switch name {
        case "installationid": return installationID(String(value))
        case "userid": return userID(String(value))
        case "activityid": return activityID(String(value))
        default: return nil
        }
    }
}
