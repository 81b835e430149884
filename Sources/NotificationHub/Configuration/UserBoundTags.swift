/// The tag namespaces that name a user, such as `username:alice`: a hub's `userBoundTagPrefixes:`.
///
/// A send to `username:alice` is meant for alice's devices only, so who may put such a tag on a device matters.
/// Over a device user's bearer token, a user-bound tag must name that token's user; over the Listen key, the hub's
/// ``ListenKeyPolicy`` decides. A tag is user-bound when it starts with one of the prefixes, compared ignoring ASCII
/// case (so `UserName:alice` is caught too); it names the user written after the prefix, compared exactly.
///
/// ```yaml
/// userBoundTagPrefixes: ["username:", "user:"]   # the default; [] for none
/// ```
public struct UserBoundTags: Sendable, Hashable {
    /// The prefixes, as configured. No prefix starts with another.
    public private(set) var prefixes: [String]

    /// `username:` and `user:`.
    public static let defaultPrefixes = ["username:", "user:"]

    /// Creates the namespaces.
    ///
    /// - Precondition: every prefix is a valid tag and none starts with another (ignoring ASCII case);
    ///   ``problem(with:)`` says why a list is refused.
    public init(prefixes: [String] = defaultPrefixes) {
        precondition(Self.problem(with: prefixes) == nil, Self.problem(with: prefixes) ?? "")
        self.prefixes = prefixes
    }

    /// Why a list of prefixes cannot be used, or `nil` when it can.
    public static func problem(with prefixes: [String]) -> String? {
        for prefix in prefixes {
            do {
                try Tag.validate(prefix)
            } catch {
                return "prefix '\(prefix.prefix(40))' is not a valid tag start: \(error.message)"
            }
        }
        for (index, prefix) in prefixes.enumerated() {
            for (otherIndex, other) in prefixes.enumerated() where otherIndex != index {
                if startsWith(other, prefix) {
                    return "prefix '\(prefix)' is the start of '\(other)', so a tag could name two users; end each prefix with ':'"
                }
            }
        }
        return nil
    }

    /// The prefix a tag starts with (as configured), or `nil` for a tag that names no user.
    public func prefix(of tag: String) -> String? {
        prefixes.first { Self.startsWith(tag, $0) }
    }

    /// Whether `text` starts with `prefix`, ignoring ASCII case, byte by byte.
    static func startsWith(_ text: String, _ prefix: String) -> Bool {
        let lower = { (byte: UInt8) -> UInt8 in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
        }
        return text.utf8.count >= prefix.utf8.count
            && zip(text.utf8, prefix.utf8).allSatisfy { lower($0) == lower($1) }
    }

    /// Whether `tag` is user-bound and names exactly `user`.
    public func tag(_ tag: String, names user: String) -> Bool {
        guard let prefix = prefix(of: tag) else { return false }
        return tag.utf8.dropFirst(prefix.utf8.count).elementsEqual(user.utf8)
    }

    /// The first user-bound tag of `tags` that does not name `user` (every user-bound tag when `user` is `nil`).
    public func firstForeignTag(in tags: some Sequence<String>, user: String?) -> String? {
        tags.first { tag in
            guard prefix(of: tag) != nil else { return false }
            guard let user else { return true }
            return !self.tag(tag, names: user)
        }
    }

    /// The tags that name `user`, one per prefix (`username:alice`, `user:alice`), leaving out any that would not be a
    /// valid tag (a user id with characters tags do not allow).
    public func tags(of user: String) -> [String] {
        prefixes.map { $0 + user }.filter { (try? Tag.validate($0)) != nil }
    }

    /// Reads a hub's `userBoundTagPrefixes` (the defaults when absent).
    init(hub node: ConfigurationNode) {
        self.prefixes = Self.defaultPrefixes
        let child = node.child("userBoundTagPrefixes")
        guard child.isPresent else { return }
        let prefixes = node.strings("userBoundTagPrefixes")
        if let problem = Self.problem(with: prefixes) {
            child.report(problem)
        } else {
            self.prefixes = prefixes
        }
    }
}
