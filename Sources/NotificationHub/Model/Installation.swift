import Foundation

/// One app install on one device, in Azure Notification Hubs' JSON shape.
///
/// ```json
/// {"installationId": "2f1c…", "platform": "apns", "pushChannel": "ab12…", "tags": ["username:alice"],
///  "pushVariables": {"firstName": "Alice"}, "expirationTime": "2027-01-31T12:00:00.000Z"}
/// ```
/// `lastUpdate`, `pushChannelExpired` and `expiredPushChannel` (the same flag under Azure's name and the hub's
/// older one) are maintained by the hub and ignored on input; `expirationTime` is the client's to set (absent,
/// `null` or Azure's `9999-12-31…` for never). Every optional field may be JSON `null`. The JSON written always
/// holds `expirationTime` (`9999-12-31T23:59:59.999Z` for never), both expiry flags, and each template's tags with
/// its implicit name tag (``InstallationTemplate/implicitTag(name:)``).
public struct Installation: Hashable, Sendable {
    /// The client-chosen identifier of the installation.
    public var installationID: String
    /// The user the installation belongs to, if any.
    public var userID: String?
    /// The platform that delivers to this installation.
    public var platform: Platform
    /// The device handle: an APNs device token, an FCM registration token, a WNS channel URI, or an object.
    public var pushChannel: PushChannel
    /// User tags, e.g. `username:alice`.
    public var tags: [String]
    /// Named templates for template sends.
    public var templates: [String: InstallationTemplate]
    /// The device's own values for template properties (Azure's `pushVariables`): a template send's property of
    /// the same name (ignoring case) wins over them. See ``PushVariables``.
    public var pushVariables: [String: String]
    /// When the installation expires, or `nil` for never: the hub stops delivering to it then and deletes it.
    public var expirationTime: Date?
    /// When the installation was last written (maintained by the hub).
    public var lastUpdate: Date?
    /// Whether the platform reported the push channel as expired (maintained by the hub).
    public var expiredPushChannel: Bool

    /// Creates an installation.
    public init(
        installationID: String,
        userID: String? = nil,
        platform: Platform,
        pushChannel: PushChannel,
        tags: [String] = [],
        templates: [String: InstallationTemplate] = [:],
        pushVariables: [String: String] = [:],
        expirationTime: Date? = nil,
        lastUpdate: Date? = nil,
        expiredPushChannel: Bool = false
    ) {
        self.installationID = installationID
        self.userID = userID
        self.platform = platform
        self.pushChannel = pushChannel
        self.tags = tags
        self.templates = templates
        self.pushVariables = pushVariables
        self.expirationTime = expirationTime
        self.lastUpdate = lastUpdate
        self.expiredPushChannel = expiredPushChannel
    }

    /// The system tags the hub adds: `$InstallationId:{id}` and, when a user is set, `$UserId:{user}`.
    public var systemTags: [String] {
        var tags = [SystemTag.installationID(installationID)]
        if let userID { tags.append(SystemTag.userID(userID)) }
        return tags
    }

    /// User tags, template tags (with each template's implicit name tag) and system tags: every tag an expression
    /// can match for a template send.
    public var allTags: Set<String> {
        var all = Set(tags).union(systemTags)
        for (name, template) in templates { all.formUnion(template.routingTags(name: name)) }
        return all
    }

    /// Whether the installation has expired at `now` (its ``expirationTime`` is not after it).
    public func isExpired(at now: Date) -> Bool {
        expirationTime.map { $0 <= now } ?? false
    }

    /// Drops from each template's tags its implicit name tag, which the hub adds by itself (so that an
    /// installation read back and written again carries the same tags).
    public mutating func removeImplicitTemplateTags() {
        for (name, template) in templates {
            guard let implicit = InstallationTemplate.implicitTag(name: name), template.tags.contains(implicit) else { continue }
            templates[name]?.tags.removeAll { $0 == implicit }
        }
    }

    /// User tags plus system tags: what a native send's expression is evaluated against.
    public var routingTags: Set<String> {
        Set(tags).union(systemTags)
    }
}

/// A per-installation template: a body with `$(property)` expressions, optional headers and tags.
public struct InstallationTemplate: Hashable, Sendable, Codable {
    /// The body in the platform's native format, holding template expressions.
    public var body: String
    /// Headers sent with the rendered notification (values may hold template expressions).
    public var headers: [String: String]
    /// An optional expiry expression (Azure compatibility; APNs uses it as `apns-expiration`).
    public var expiry: String?
    /// Tags that apply to this template only.
    public var tags: [String]

    /// Creates a template.
    public init(body: String, headers: [String: String] = [:], expiry: String? = nil, tags: [String] = []) {
        self.body = body
        self.headers = headers
        self.expiry = expiry
        self.tags = tags
    }

    /// The tag a template named `name` carries by itself, as Azure adds a template's name to the tags of its
    /// registration: the name when it is a valid tag (``Tag``), `nil` otherwise (a name with a space, for example,
    /// which no tag expression can name).
    public static func implicitTag(name: String) -> String? {
        (try? Tag.validate(name)) != nil ? name : nil
    }

    /// The tags a template send's expression sees for this template besides its installation's: its own tags and
    /// its implicit name tag.
    public func routingTags(name: String) -> [String] {
        guard let implicit = Self.implicitTag(name: name), !tags.contains(implicit) else { return tags }
        return tags + [implicit]
    }

    enum CodingKeys: String, CodingKey { case body, headers, expiry, tags }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        body = try container.decode(String.self, forKey: .body)
        headers = try container.decodeIfPresent([String: String].self, forKey: .headers) ?? [:]
        expiry = try container.decodeIfPresent(String.self, forKey: .expiry)
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(body, forKey: .body)
        if !headers.isEmpty { try container.encode(headers, forKey: .headers) }
        try container.encodeIfPresent(expiry, forKey: .expiry)
        if !tags.isEmpty { try container.encode(tags, forKey: .tags) }
    }
}

extension Installation: Codable {
    enum CodingKeys: String, CodingKey {
        case installationID = "installationId"
        case userID = "userId"
        case platform, pushChannel, tags, templates, pushVariables, expirationTime, lastUpdate, expiredPushChannel
        case pushChannelExpired
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        installationID = try container.decode(String.self, forKey: .installationID)
        userID = try container.decodeIfPresent(String.self, forKey: .userID)
        platform = try container.decode(Platform.self, forKey: .platform)
        pushChannel = try container.decode(PushChannel.self, forKey: .pushChannel)
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? []
        templates = try container.decodeIfPresent([String: InstallationTemplate].self, forKey: .templates) ?? [:]
        pushVariables = try container.decodeIfPresent([String: String].self, forKey: .pushVariables) ?? [:]
        expirationTime = try container.decodeIfPresent(Date.self, forKey: .expirationTime)
        if let time = expirationTime, time >= HubDateFormat.never { expirationTime = nil }
        lastUpdate = try container.decodeIfPresent(Date.self, forKey: .lastUpdate)
        expiredPushChannel =
            try container.decodeIfPresent(Bool.self, forKey: .pushChannelExpired)
            ?? container.decodeIfPresent(Bool.self, forKey: .expiredPushChannel) ?? false
        removeImplicitTemplateTags()
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(installationID, forKey: .installationID)
        try container.encodeIfPresent(userID, forKey: .userID)
        try container.encode(platform, forKey: .platform)
        try container.encode(pushChannel, forKey: .pushChannel)
        try container.encode(tags, forKey: .tags)
        if !templates.isEmpty {
            var written = templates
            for (name, template) in templates { written[name]?.tags = template.routingTags(name: name) }
            try container.encode(written, forKey: .templates)
        }
        try container.encode(pushVariables, forKey: .pushVariables)
        if let expirationTime {
            try container.encode(expirationTime, forKey: .expirationTime)
        } else {
            try container.encode(HubDateFormat.neverText, forKey: .expirationTime)
        }
        try container.encodeIfPresent(lastUpdate, forKey: .lastUpdate)
        try container.encode(expiredPushChannel, forKey: .pushChannelExpired)
        try container.encode(expiredPushChannel, forKey: .expiredPushChannel)
    }
}

extension Installation {
    /// A JSON encoder using the hub's date format (ISO 8601 with milliseconds).
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(HubDateFormat.string(from: date))
        }
        return encoder
    }

    /// A JSON decoder accepting ISO 8601 dates with or without fractional seconds (see ``HubDateFormat/date(from:)``).
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = HubDateFormat.date(from: text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "expected an ISO 8601 date such as 2026-01-31T12:00:00Z")
            }
            return date
        }
        return decoder
    }
}

/// The hub's date format: ISO 8601 in UTC with milliseconds.
public enum HubDateFormat {
    /// What is written for "never", as Azure writes a registration's `ExpirationTime`.
    public static let neverText = "9999-12-31T23:59:59.999Z"

    /// The start of the last second of year 9999: a date read at or after it means never.
    public static let never = Date(timeIntervalSince1970: 253_402_300_799)

    /// Formats a date at its nearest millisecond, e.g. `2026-11-22T07:30:00.000Z`. Rounding (rather than the
    /// formatter's truncation of a binary fraction) makes two dates that differ only by the last bits of a
    /// conversion, such as a write's answer and the same value read back from a store, read the same.
    public static func string(from date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        let seconds = (milliseconds / 1000).rounded(.down)
        let fraction = Int(milliseconds - seconds * 1000)
        let whole = Date.ISO8601FormatStyle().format(Date(timeIntervalSince1970: seconds))
        let digits = String(fraction)
        return whole.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// A date at the precision the hub writes it: the nearest whole millisecond since 1970.
    public static func millisecondPrecision(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// Parses an ISO 8601 date and time as .NET's JSON writers send them: with or without fractional seconds (any
    /// number of digits, e.g. `2026-12-01T10:00:00.1234567Z`), in UTC (`Z`), at an offset (`+01:00`), or with no
    /// zone at all, which is taken as UTC.
    public static func date(from text: String) -> Date? {
        var text = Substring(text)
        var offset = 0
        if text.hasSuffix("Z") || text.hasSuffix("z") {
            text = text.dropLast()
        } else if text.utf8.count > 6 {
            let zone = Array(text.utf8.suffix(6))
            if zone[0] == UInt8(ascii: "+") || zone[0] == UInt8(ascii: "-"), zone[3] == UInt8(ascii: ":"),
                let hours = Int(String(decoding: zone[1...2], as: UTF8.self)),
                let minutes = Int(String(decoding: zone[4...5], as: UTF8.self)), hours < 24, minutes < 60
            {
                offset = (hours * 3600 + minutes * 60) * (zone[0] == UInt8(ascii: "-") ? -1 : 1)
                text = text.dropLast(6)
            }
        }
        // Fractions beyond milliseconds are cut (the hub keeps milliseconds).
        var fraction = ""
        if let dot = text.firstIndex(of: ".") {
            let digits = text[text.index(after: dot)...]
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            fraction = "." + digits.prefix(3).padding(toLength: 3, withPad: "0", startingAt: 0)
            text = text[..<dot]
        }
        let utc: Date?
        if fraction.isEmpty {
            utc = try? Date.ISO8601FormatStyle().parse(String(text) + "Z")
        } else {
            utc = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(String(text) + fraction + "Z")
        }
        return utc.map { $0.addingTimeInterval(TimeInterval(-offset)) }
    }
}
