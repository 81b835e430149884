import Foundation

/// A device registration in Azure Notification Hubs' older registrations model: one push channel, tags, and at
/// most one template.
///
/// A native registration (``template`` is `nil`) receives native sends; a template registration receives template
/// sends rendered through its template. Registrations are stored as rows of the installation store, so tag
/// expressions, direct sends, telemetry and feedback treat them like installations (see `docs/registrations.md`).
/// Registrations derived from installations (``installationID`` set) are read-only projections.
public struct Registration: Hashable, Sendable {
    /// The registration's id.
    public var registrationID: String
    /// The platform that delivers to this registration.
    public var platform: Platform
    /// The device handle.
    public var pushChannel: PushChannel
    /// Tags, in the order they were given (duplicates removed).
    public var tags: [String]
    /// The template of a template registration; `nil` for a native registration.
    public var template: RegistrationTemplate?
    /// The device's own values for its template's properties (`<PushVariables>`; see ``PushVariables``).
    public var pushVariables: [String: String]
    /// The version of the registration, its ETag; increases with every write (maintained by the hub).
    public var etag: Int
    /// When the registration expires (maintained by the hub; `nil` for never).
    public var expirationTime: Date?
    /// When it was created (maintained by the hub).
    public var createdAt: Date?
    /// When it was last written (maintained by the hub).
    public var lastUpdate: Date?
    /// The installation this registration is derived from, for a read-only projection of an installation.
    public var installationID: String?
    /// The user the registration belongs to (maintained by the hub): the user whose bearer token wrote it, or for a
    /// projection the installation's `userId`. Not part of Azure's XML.
    public var userID: String?

    /// Creates a registration.
    public init(
        registrationID: String, platform: Platform, pushChannel: PushChannel, tags: [String] = [],
        template: RegistrationTemplate? = nil, pushVariables: [String: String] = [:], etag: Int = 0, expirationTime: Date? = nil, createdAt: Date? = nil,
        lastUpdate: Date? = nil, installationID: String? = nil, userID: String? = nil
    ) {
        self.userID = userID
        self.registrationID = registrationID
        self.platform = platform
        self.pushChannel = pushChannel
        self.tags = tags
        self.template = template
        self.pushVariables = pushVariables
        self.etag = etag
        self.expirationTime = expirationTime
        self.createdAt = createdAt
        self.lastUpdate = lastUpdate
        self.installationID = installationID
    }

    /// Whether this is a template registration.
    public var isTemplate: Bool { template != nil }
}

/// The template of a template registration.
public struct RegistrationTemplate: Hashable, Sendable, Codable {
    /// The template's name (`TemplateName`), if given.
    public var name: String?
    /// The body with template expressions (`BodyTemplate`).
    public var body: String
    /// The expiry expression (`Expiry`, for formats whose template form has it).
    public var expiry: String?
    /// The priority (`Priority`, for formats whose template form has it), sent as ``priorityHeader``.
    public var priority: String?
    /// Headers sent with the rendered notification (the format's header list, e.g. `WnsHeaders`), in the order given.
    public var headers: [RegistrationHeader]
    /// The header ``priority`` is sent as, from the registration's format (``RegistrationFormat/priority``). Set by
    /// the reader and the installation service; not part of the description, so neither stored nor compared.
    public var priorityHeader: String? = nil

    /// Creates a template.
    public init(
        name: String? = nil, body: String, expiry: String? = nil, priority: String? = nil,
        headers: [RegistrationHeader] = [], priorityHeader: String? = nil
    ) {
        self.name = name
        self.body = body
        self.expiry = expiry
        self.priority = priority
        self.headers = headers
        self.priorityHeader = priorityHeader
    }

    enum CodingKeys: String, CodingKey {
        case name, body, expiry, priority, headers
    }

    public static func == (lhs: RegistrationTemplate, rhs: RegistrationTemplate) -> Bool {
        lhs.name == rhs.name && lhs.body == rhs.body && lhs.expiry == rhs.expiry && lhs.priority == rhs.priority
            && lhs.headers == rhs.headers
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(body)
        hasher.combine(expiry)
        hasher.combine(priority)
        hasher.combine(headers)
    }

    /// The template as an installation template, which is how the dispatcher renders it: the priority joins the
    /// headers under ``priorityHeader``.
    public var installationTemplate: InstallationTemplate {
        var headers: [String: String] = [:]
        for header in self.headers { headers[header.name] = header.value }
        if let priority, let priorityHeader { headers[priorityHeader] = priority }
        return InstallationTemplate(body: body, headers: headers, expiry: expiry)
    }
}

/// One header of a template registration (an item of the format's header list: `<Header>` and `<Value>`).
public struct RegistrationHeader: Hashable, Sendable, Codable {
    /// The header name, e.g. `X-WNS-Type`.
    public var name: String
    /// The value; may hold template expressions.
    public var value: String

    /// Creates a header.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Registration ids: what the hub generates, what it accepts, and the ids of installation projections.
public enum RegistrationID {
    /// Checks a stored registration's id: the hub's identifier policy (``Identifier``), and no leading `~`, which
    /// marks the projections of installations.
    ///
    /// The hub generates ids in Azure's form (`<19 digits>-<19 digits>-<digit>`); clients may choose their own with
    /// `PUT`, as Azure allows.
    public static func validate(_ id: String) throws(HubError) {
        try Identifier.validate(id, as: .registrationID)
        guard !id.hasPrefix("~") else {
            throw HubError(
                .invalidIdentifier,
                "a registration id must not start with '~', which marks registrations derived from installations")
        }
    }

    /// A new id in Azure's form, e.g. `8372532420827572008-8588300410718515901-4`.
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let first = UInt64.random(in: 1_000_000_000_000_000_000...9_999_999_999_999_999_999, using: &generator)
        let second = UInt64.random(in: 1_000_000_000_000_000_000...9_999_999_999_999_999_999, using: &generator)
        return "\(first)-\(second)-\(Int.random(in: 1...9, using: &generator))"
    }

    /// The id of the native registration an installation projects: `~` and the installation id in base64url.
    public static func projection(installationID: String) -> String {
        "~" + base64URL(installationID)
    }

    /// The id of the template registration an installation's template projects.
    public static func projection(installationID: String, templateName: String) -> String {
        "~" + base64URL(installationID) + "~" + base64URL(templateName)
    }

    /// The installation (and template name) a projection id refers to, or `nil` when `id` is not a projection id.
    public static func parseProjection(_ id: String) -> (installationID: String, templateName: String?)? {
        guard id.hasPrefix("~") else { return nil }
        let parts = id.dropFirst().split(separator: "~", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let installation = decodeBase64URL(parts[0]) else { return nil }
        if parts.count == 1 { return (installation, nil) }
        guard let template = decodeBase64URL(parts[1]) else { return nil }
        return (installation, template)
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64URL(_ text: Substring) -> String? {
        guard !text.isEmpty, text.utf8.count <= 1024 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let decoded = String(data: data, encoding: .utf8),
            base64URL(decoded) == text
        else { return nil }
        return decoded
    }
}
