import NIOCore

/// The adapters of one hub, indexed by platform and format.
public struct AdapterSet: Sendable {
    /// The adapters, in configuration order.
    public let adapters: [any PlatformAdapter]
    private let byPlatform: [Platform: Int]
    private let byFormat: [NotificationFormat: [Platform]]
    /// The `ServiceBusNotification-*` send headers some adapter reads (lower-cased), which the API passes on:
    /// gathered once here, since every send asks.
    public let serviceBusHeaders: Set<String>
    /// Reads and writes Azure's registration descriptions of the platforms whose adapters declare a
    /// ``RegistrationFormat``.
    public let registrationXML: RegistrationXML

    /// Indexes adapters. Throws when two adapters claim the same platform. `knownRegistrationFormats` are the
    /// registration descriptions of every plugin the process has (``AdapterRegistry/registrationFormats``), so that a
    /// description of a platform these adapters do not serve is refused as such.
    public init(_ adapters: [any PlatformAdapter], knownRegistrationFormats: [RegistrationFormat] = []) throws(HubError) {
        var byPlatform: [Platform: Int] = [:]
        var byFormat: [NotificationFormat: [Platform]] = [:]
        for (index, adapter) in adapters.enumerated() {
            for platform in adapter.descriptor.platforms {
                if byPlatform[platform] != nil {
                    throw HubError(.conflict, "two adapters serve the platform '\(platform)'; keep one")
                }
                byPlatform[platform] = index
            }
            for (format, platforms) in adapter.descriptor.formats {
                byFormat[format, default: []].append(contentsOf: platforms)
            }
        }
        self.adapters = adapters
        self.byPlatform = byPlatform
        self.byFormat = byFormat
        serviceBusHeaders = Set(adapters.flatMap { $0.descriptor.serviceBusHeaders.map { $0.lowercased() } })
        var formats: [RegistrationFormat] = []
        for format in adapters.flatMap({ $0.descriptor.registrationFormats }) {
            if let other = formats.first(where: { $0.platform == format.platform || $0.prefix == format.prefix }) {
                throw HubError(
                    .conflict, "two adapters describe registrations of '\(other.platform)' or '\(other.prefix)'; keep one")
            }
            formats.append(format)
        }
        registrationXML = RegistrationXML(formats: formats, unserved: knownRegistrationFormats)
    }

    /// The adapter that delivers to a platform.
    public func adapter(for platform: Platform) -> (any PlatformAdapter)? {
        byPlatform[platform].map { adapters[$0] }
    }

    /// Every platform served.
    public var platforms: [Platform] { byPlatform.keys.sorted() }

    /// Every accepted format, including `template` when any adapter renders templates.
    public var formats: [NotificationFormat] {
        var formats = Set(byFormat.keys)
        if adapters.contains(where: { !$0.descriptor.templateFormats.isEmpty }) { formats.insert(.template) }
        return formats.sorted()
    }

    /// The platforms a send in `format` reaches (for `template`, every platform that renders templates).
    public func platforms(for format: NotificationFormat) -> [Platform] {
        if format == .template {
            return adapters.flatMap { $0.descriptor.templateFormats.keys }.sorted()
        }
        return byFormat[format] ?? []
    }

    /// The platform a direct send in `format` goes to.
    public func directPlatform(for format: NotificationFormat) -> Platform? {
        byFormat[format]?.first
    }

    /// Checks that `format` is accepted, listing the accepted formats when not.
    public func checkFormat(_ format: NotificationFormat) throws(HubError) {
        guard formats.contains(format) else {
            throw HubError(
                .unknownFormat,
                "the format '\(format)' is not accepted by this hub; use one of: \(formats.map(\.name).joined(separator: ", "))")
        }
    }

    /// Validates a push channel with the platform's adapter.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard let adapter = adapter(for: platform) else {
            throw HubError(
                .unknownPlatform,
                "the platform '\(platform)' is not served by this hub; use one of: \(platforms.map(\.name).joined(separator: ", "))")
        }
        try Self.checkStorable(pushChannel)
        try adapter.validate(pushChannel: pushChannel, platform: platform)
    }

    /// Rules every push channel follows whatever its platform, so that it is stored and read back unchanged: at
    /// most 4 KiB, and a string handle holds no control character.
    static func checkStorable(_ pushChannel: PushChannel) throws(HubError) {
        let text = pushChannel.storageKey
        if text.isEmpty { throw HubError(.invalidPushChannel, "pushChannel must not be empty") }
        if text.utf8.count > 4096 {
            throw HubError(.invalidPushChannel, "pushChannel is \(text.utf8.count) bytes; at most 4096 are allowed")
        }
        if case .handle(let handle) = pushChannel,
            handle.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            throw HubError(.invalidPushChannel, "pushChannel holds a control character")
        }
    }

    /// The id-only pushes announcing a secure notification, gathered from every adapter (one per format the adapter
    /// accepts, in format order).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        var byFormat: [NotificationFormat: SecurePushAnnouncement] = [:]
        for adapter in adapters {
            for announcement in adapter.secureAnnouncements(for: request)
            where adapter.descriptor.formats[announcement.format] != nil && byFormat[announcement.format] == nil {
                byFormat[announcement.format] = announcement
            }
        }
        return byFormat.keys.sorted().compactMap { byFormat[$0] }
    }

    /// The name telemetry gives a platform (Azure's `NotificationDetails` element prefix, e.g. `Apns`), from the
    /// adapter that serves it.
    public func telemetryName(for platform: Platform) -> String {
        (adapter(for: platform)?.descriptor ?? PlatformDescriptor(
            platforms: [], formats: [:], templateFormats: [:], maximumPayloadBytes: 0)).telemetryName(for: platform)
    }

    /// The console's sample notification of a format, from the adapter that accepts it.
    public func sample(for format: NotificationFormat) -> NotificationSample? {
        adapters.lazy.compactMap { $0.descriptor.samples[format] }.first
    }

    /// Validates a notification: its format is accepted and every adapter it reaches accepts its body.
    public func validate(notification: Notification) throws(HubError) {
        try checkFormat(notification.format)
        try notification.headers.validate()
        if case .tags(let expression) = notification.audience {
            // What is stored is the expression's text: it must read back as the same expression.
            guard
                (try? TagExpression(
                    parsing: expression.description,
                    limits: .init(maximumTagsOrOnly: .max, maximumTags: .max, maximumDepth: 1024))) == expression
            else {
                throw HubError(.invalidTagExpression, "the audience cannot be stored as a tag expression; check its tags")
            }
        }
        if notification.format == .template {
            _ = try TemplateProperties(json: try JSONValue(parsingBody: notification.body.readableBytesView))
            return
        }
        var checked = Set<Int>()
        for platform in platforms(for: notification.format) {
            guard let index = byPlatform[platform], checked.insert(index).inserted else { continue }
            try adapters[index].validate(notification: notification)
        }
    }
}
