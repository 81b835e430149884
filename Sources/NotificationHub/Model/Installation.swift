import Foundation

/// One app install on one device, in Azure Notification Hubs' JSON shape.
///
/// ```json
/// {"installationId": "2f1c…", "platform": "apns", "pushChannel": "ab12…", "tags": ["username:alice"]}
/// ```
/// `expirationTime`, `lastUpdate` and `expiredPushChannel` are maintained by the hub and ignored on input.
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
    /// When the installation expires (maintained by the hub).
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

    /// User tags, template tags and system tags: every tag an expression can match for a template send.
    public var allTags: Set<String> {
        var all = Set(tags).union(systemTags)
        for template in templates.values { all.formUnion(template.tags) }
        return all
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
        case platform, pushChannel, tags, templates, expirationTime, lastUpdate, expiredPushChannel
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        installationID = try container.decode(String.self, forKey: .installationID)
        userID = try container.decodeIfPresent(String.self, forKey: .userID)
        platform = try container.decode(Platform.self, forKey: .platform)
        pushChannel = try container.decode(PushChannel.self, forKey: .pushChannel)
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? []
        templates = try container.decodeIfPresent([String: InstallationTemplate].self, forKey: .templates) ?? [:]
        expirationTime = try container.decodeIfPresent(Date.self, forKey: .expirationTime)
        lastUpdate = try container.decodeIfPresent(Date.self, forKey: .lastUpdate)
        expiredPushChannel = try container.decodeIfPresent(Bool.self, forKey: .expiredPushChannel) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(installationID, forKey: .installationID)
        try container.encodeIfPresent(userID, forKey: .userID)
        try container.encode(platform, forKey: .platform)
        try container.encode(pushChannel, forKey: .pushChannel)
        try container.encode(tags, forKey: .tags)
        if !templates.isEmpty { try container.encode(templates, forKey: .templates) }
        try container.encodeIfPresent(expirationTime, forKey: .expirationTime)
        try container.encodeIfPresent(lastUpdate, forKey: .lastUpdate)
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

    /// A JSON decoder accepting ISO 8601 dates with or without fractional seconds.
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
    /// Formats a date, e.g. `2026-11-22T07:30:00.000Z`.
    public static func string(from date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }

    /// Parses an ISO 8601 date with or without fractional seconds.
    public static func date(from text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) {
            return date
        }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
