import Foundation

/// Reads and writes registrations as Azure's Atom entries and feeds.
///
/// An entry holds one description in `<content type="application/xml">`, either named by its element
/// (`<AppleRegistrationDescription>`) or as `<RegistrationDescription i:type="AppleRegistrationDescription">`.
/// What is written follows Azure's answers: the entry's `m:etag`, Atom `id`, `title`, `published`, `updated` and
/// `link`, then the description's elements in Azure's order (`ETag`, `ExpirationTime`, `RegistrationId`, `Tags`,
/// `PushVariables`, the handle, `BodyTemplate` in CDATA, the platform's template elements).
///
/// `PushVariables` holds a JSON object of strings as its text, as Azure's SDKs write it:
/// `<PushVariables>{"firstName":"Alice"}</PushVariables>`.
///
/// Which descriptions exist comes from the adapters: a value reads and writes the ``RegistrationFormat``s it was
/// made with (``AdapterSet/registrationXML``), and the core names no platform.
public struct RegistrationXML: Sendable {
    /// The formats read and written, in the adapters' order.
    public let formats: [RegistrationFormat]
    /// Formats of platforms this process has plugins for that the hub does not serve: their descriptions are
    /// answered ``HubError/Code/unknownPlatform`` rather than as unknown elements.
    public let unserved: [RegistrationFormat]

    /// A reader and writer of `formats`; descriptions in `unserved` formats are refused as platforms not served.
    public init(formats: [RegistrationFormat], unserved: [RegistrationFormat] = []) {
        self.formats = formats
        self.unserved = unserved.filter { format in !formats.contains { $0.prefix == format.prefix } }
    }

    /// The format of a description element name, and whether it is the template form.
    public func format(named element: String) -> (format: RegistrationFormat, template: Bool)? {
        for format in formats {
            if element == format.nativeElement { return (format, false) }
            if element == format.templateElement { return (format, true) }
        }
        return nil
    }

    /// The format registrations of `platform` use, if the hub can describe that platform.
    public func format(of platform: Platform) -> RegistrationFormat? {
        formats.first { $0.platform == platform }
    }

    /// Every description element name, for error messages.
    public var elementNames: [String] { formats.flatMap { [$0.nativeElement, $0.templateElement] } }

    /// The Atom namespace.
    public static let atomNamespace = "http://www.w3.org/2005/Atom"
    /// The namespace of registration descriptions.
    public static let descriptionNamespace = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
    /// XML Schema instance (`i:type`, `i:nil`).
    public static let instanceNamespace = "http://www.w3.org/2001/XMLSchema-instance"
    /// OData metadata (`m:etag`).
    public static let metadataNamespace = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
    /// The content type of an entry.
    public static let entryContentType = "application/atom+xml;type=entry;charset=utf-8"
    /// The content type of a feed.
    public static let feedContentType = "application/atom+xml;type=feed;charset=utf-8"
    /// The `ExpirationTime` written for a registration that never expires (as Azure writes it).
    public static let neverExpires = HubDateFormat.neverText

    /// Some Azure pages spell the description namespace with `https`; both are accepted.
    static let descriptionNamespaces: Set<String> = [
        descriptionNamespace, "https://schemas.microsoft.com/netservices/2010/10/servicebus/connect",
    ]

    /// What an entry's description said, before the hub validated it.
    public struct Parsed: Sendable, Hashable {
        /// The registration described (id empty when the body has no `RegistrationId`).
        public var registration: Registration
        /// The description element's name, e.g. `AppleTemplateRegistrationDescription`.
        public var element: String
    }

    // MARK: Reading

    /// Parses an Atom entry holding one registration description.
    ///
    /// `ETag` and `ExpirationTime` are maintained by the hub and ignored; `RegistrationId` is returned so that the
    /// caller can compare it with the URL.
    /// - Throws: ``HubError`` (``HubError/Code/invalidXML`` or ``HubError/Code/invalidRegistration``) naming the
    ///   element at fault.
    public func parseEntry(_ bytes: some Collection<UInt8>, limits: XMLReader.Limits = .init()) throws(HubError) -> Parsed {
        let root = try XMLReader(limits: limits).parse(bytes)
        guard root.name == "entry", root.namespace == Self.atomNamespace || root.namespace.isEmpty else {
            throw Self.invalid("the body must be an Atom <entry> (namespace \(Self.atomNamespace)); its root element is <\(root.name)>")
        }
        let contents = root.children.filter { $0.name == "content" && $0.namespace == root.namespace }
        guard contents.count == 1, let content = contents.first else {
            throw Self.invalid("the <entry> must hold exactly one <content type=\"application/xml\"> element")
        }
        if let type = content.attribute("type"), !type.lowercased().hasSuffix("xml") {
            throw Self.invalid("<content> must have type=\"application/xml\", not '\(type)'")
        }
        guard content.children.count == 1, let description = content.children.first else {
            throw Self.invalid(
                "<content> must hold exactly one registration description (\(elementNames.prefix(2).map { "<\($0)>" }.joined(separator: ", ")), …); it holds \(content.children.count)")
        }
        return try parseDescription(description)
    }

    /// Parses a description element.
    public func parseDescription(_ element: XMLElement) throws(HubError) -> Parsed {
        var name = element.name
        if name == "RegistrationDescription", let type = element.attribute("type", namespace: Self.instanceNamespace) {
            name = String(type.split(separator: ":").last ?? "")
        }
        guard Self.descriptionNamespaces.contains(element.namespace) else {
            throw Self.invalid("<\(element.name)> must be in the namespace \(Self.descriptionNamespace), not '\(element.namespace)'")
        }
        if let other = unserved.first(where: { name == $0.nativeElement || name == $0.templateElement }) {
            let served = formats.map(\.platform.name)
            throw HubError(
                .unknownPlatform,
                "the platform '\(other.platform)' of <\(name)> is not served by this hub; use one of: \(served.joined(separator: ", "))")
        }
        guard let (format, isTemplate) = self.format(named: name) else {
            throw Self.invalid(
                "<\(name)> is not a registration description this hub knows; use one of: \(elementNames.joined(separator: ", "))")
        }
        var allowed = ["ETag", "ExpirationTime", "RegistrationId", "Tags", "PushVariables"] + format.channelElements
        if isTemplate { allowed += ["BodyTemplate"] + format.templateElements.map(\.name) }
        let unsupported: [String: String] = [
            "SecondaryTileName": "secondary tiles are not supported"
        ]

        var values: [String: XMLElement] = [:]
        for child in element.children {
            guard Self.descriptionNamespaces.contains(child.namespace) else {
                throw Self.invalid("<\(child.name)> in <\(name)> must be in the namespace \(Self.descriptionNamespace)")
            }
            if let reason = unsupported[child.name] {
                throw Self.invalid("<\(child.name)> in <\(name)>: \(reason)")
            }
            guard allowed.contains(child.name) else {
                throw Self.invalid("<\(child.name)> is not an element of <\(name)>; it may hold: \(allowed.joined(separator: ", "))")
            }
            guard values[child.name] == nil else { throw Self.invalid("<\(child.name)> appears twice in <\(name)>") }
            if child.attribute("nil", namespace: Self.instanceNamespace) == "true" {
                guard child.children.isEmpty, child.text.allSatisfy(\.isWhitespace) else {
                    throw Self.invalid("<\(child.name) i:nil=\"true\"> must be empty")
                }
                continue
            }
            if !format.headerLists.contains(where: { $0.list == child.name }) {
                guard child.children.isEmpty else {
                    throw Self.invalid("<\(child.name)> in <\(name)> must hold text, not the element <\(child.children[0].name)>")
                }
            }
            values[child.name] = child
        }

        func text(_ key: String) -> String? { values[key]?.text }
        func required(_ key: String) throws(HubError) -> String {
            guard let value = text(key), !value.isEmpty else { throw Self.invalid("<\(name)> needs a non-empty <\(key)>") }
            return value
        }

        let pushChannel: PushChannel
        switch format.channel {
        case .element(let key):
            pushChannel = .handle(try required(key))
        case .object(let members):
            var object: [String: JSONValue] = [:]
            for member in members { object[member.key] = .string(try required(member.element)) }
            pushChannel = .object(object)
        case .joined(let elements, _):
            var parts: [String] = []
            for element in elements { parts.append(try required(element)) }
            pushChannel = .handle(try format.joinedHandle(parts))
        }

        var tags: [String] = []
        if let list = text("Tags") {
            for piece in list.split(separator: ",", omittingEmptySubsequences: false) {
                let tag = piece.trimmingCharacters(in: .whitespacesAndNewlines)
                guard !tag.isEmpty else { throw Self.invalid("<Tags> must be a comma-separated list of tags without empty entries") }
                if !tags.contains(tag) { tags.append(tag) }
            }
        }

        var pushVariables: [String: String] = [:]
        if let text = text("PushVariables"), !text.allSatisfy(\.isWhitespace) {
            pushVariables = try Self.parsePushVariables(text)
        }

        var template: RegistrationTemplate?
        if isTemplate {
            guard let body = text("BodyTemplate"), !body.allSatisfy(\.isWhitespace) else {
                throw Self.invalid("<\(name)> needs a <BodyTemplate> holding the platform's payload with $(property) expressions, in CDATA")
            }
            var headers: [RegistrationHeader] = []
            for (key, item) in format.headerLists {
                guard let list = values[key] else { continue }
                headers = try Self.parseHeaders(list, item: item)
            }
            if let name = text("TemplateName"), name.isEmpty {
                throw Self.invalid("<TemplateName> must not be empty; leave it out instead")
            }
            template = RegistrationTemplate(
                name: text("TemplateName"), body: body, expiry: text("Expiry"), priority: text(format.priority?.element ?? "Priority"),
                headers: headers, priorityHeader: format.priority?.header)
        }
        let registration = Registration(
            registrationID: text("RegistrationId") ?? "", platform: format.platform, pushChannel: pushChannel,
            tags: tags, template: template, pushVariables: pushVariables)
        return Parsed(registration: registration, element: name)
    }

    /// The push variables of a `<PushVariables>` element: a JSON object whose values are strings.
    static func parsePushVariables(_ text: String) throws(HubError) -> [String: String] {
        let example = #"<PushVariables>{"firstName":"Alice"}</PushVariables>"#
        guard case .object(let object)? = try? JSONValue(parsing: Array(text.utf8)) else {
            throw invalid("<PushVariables> must hold a JSON object of strings, as in \(example)")
        }
        var variables: [String: String] = [:]
        for (name, value) in object {
            switch value {
            case .string(let string): variables[name] = string
            case .null: continue
            default: throw invalid("<PushVariables>: the value of '\(name.prefix(64))' must be a string, as in \(example)")
            }
        }
        return variables
    }

    static func parseHeaders(_ list: XMLElement, item: String) throws(HubError) -> [RegistrationHeader] {
        guard list.text.allSatisfy(\.isWhitespace) else {
            throw invalid("<\(list.name)> must hold only <\(item)> elements, not text")
        }
        var headers: [RegistrationHeader] = []
        for entry in list.children {
            guard entry.name == item, descriptionNamespaces.contains(entry.namespace) else {
                throw invalid("<\(entry.name)> is not allowed in <\(list.name)>; it holds <\(item)><Header>…</Header><Value>…</Value></\(item)> elements")
            }
            var header: String?
            var value: String?
            for part in entry.children {
                guard part.children.isEmpty, descriptionNamespaces.contains(part.namespace) else {
                    throw invalid("<\(part.name)> in <\(item)> must be <Header> or <Value> holding text")
                }
                switch part.name {
                case "Header" where header == nil: header = part.text
                case "Value" where value == nil: value = part.text
                default: throw invalid("<\(item)> holds one <Header> and one <Value>; <\(part.name)> is not expected")
                }
            }
            guard let header, !header.isEmpty, let value else {
                throw invalid("every <\(item)> needs a non-empty <Header> and a <Value>")
            }
            guard !headers.contains(where: { $0.name.lowercased() == header.lowercased() }) else {
                throw invalid("header '\(header)' appears twice in <\(list.name)>")
            }
            headers.append(RegistrationHeader(name: header, value: value))
        }
        return headers
    }

    static func invalid(_ message: String) -> HubError { HubError(.invalidRegistration, message) }

    // MARK: Writing

    /// The description element of a registration, e.g. `<AppleRegistrationDescription …>…</…>`.
    public func description(_ registration: Registration) -> String {
        guard let format = self.format(of: registration.platform) else { return "" }
        let neverExpires = Self.neverExpires, descriptionNamespace = Self.descriptionNamespace
        let instanceNamespace = Self.instanceNamespace
        let element = registration.template == nil ? format.nativeElement : format.templateElement
        var xml = "<\(element) xmlns=\"\(descriptionNamespace)\" xmlns:i=\"\(instanceNamespace)\">"
        func add(_ name: String, _ value: String) { xml += "<\(name)>\(XMLText.escape(value))</\(name)>" }
        add("ETag", String(registration.etag))
        add("ExpirationTime", registration.expirationTime.map(HubDateFormat.string(from:)) ?? neverExpires)
        add("RegistrationId", registration.registrationID)
        if !registration.tags.isEmpty { add("Tags", registration.tags.joined(separator: ",")) }
        if !registration.pushVariables.isEmpty {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if let json = try? encoder.encode(registration.pushVariables) {
                add("PushVariables", String(decoding: json, as: UTF8.self))
            }
        }
        switch format.channel {
        case .element(let name):
            add(name, registration.pushChannel.storageKey)
        case .object(let members):
            if case .object(let object) = registration.pushChannel {
                for member in members {
                    if case .string(let value)? = object[member.key] { add(member.element, value) }
                }
            }
        case .joined(let elements, _):
            if let parts = format.parts(ofJoined: registration.pushChannel.storageKey) {
                for (element, part) in zip(elements, parts) { add(element, part) }
            }
        }
        if let template = registration.template {
            xml += "<BodyTemplate>\(XMLText.cdata(template.body))</BodyTemplate>"
            for part in format.templateElements {
                switch part {
                case .expiry: if let expiry = template.expiry { add("Expiry", expiry) }
                case .templateName: if let name = template.name { add("TemplateName", name) }
                case .priority: if let priority = template.priority { add("Priority", priority) }
                case .headerValue(let element, _, _): if let value = template.priority { add(element, value) }
                case .headers(_, let item, let writtenWhenEmpty):
                    if writtenWhenEmpty || !template.headers.isEmpty { xml += Self.headers(template.headers, item) }
                }
            }
        }
        return xml + "</\(element)>"
    }

    static func headers(_ headers: [RegistrationHeader], _ item: String) -> String {
        guard !headers.isEmpty else { return "<\(item)s/>" }
        var xml = "<\(item)s>"
        for header in headers {
            xml += "<\(item)><Header>\(XMLText.escape(header.name))</Header><Value>\(XMLText.escape(header.value))</Value></\(item)>"
        }
        return xml + "</\(item)s>"
    }

    /// The weak ETag header value of a registration, e.g. `W/"3"`.
    public static func etagHeader(_ registration: Registration) -> String { "W/\"\(registration.etag)\"" }

    /// An Atom entry, as `GET /{hub}/registrations/{id}` answers. `url` is the registration's address.
    public func entry(_ registration: Registration, url: String) -> String {
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
            + entryElement(registration, url: url, declaringAtom: true)
    }

    func entryElement(_ registration: Registration, url: String, declaringAtom: Bool) -> String {
        let etag = XMLText.escapeAttribute(Self.etagHeader(registration))
        let atom = declaringAtom ? " xmlns=\"\(Self.atomNamespace)\"" : ""
        let updated = Self.atomDate(registration.lastUpdate ?? Date())
        let published = Self.atomDate(registration.createdAt ?? registration.lastUpdate ?? Date())
        return "<entry a:etag=\"\(etag)\"\(atom) xmlns:a=\"\(Self.metadataNamespace)\">"
            + "<id>\(XMLText.escape(url))</id><title type=\"text\">\(XMLText.escape(registration.registrationID))</title>"
            + "<published>\(published)</published><updated>\(updated)</updated>"
            + "<link rel=\"self\" href=\"\(XMLText.escapeAttribute(url))\"/>"
            + "<content type=\"application/xml\">\(description(registration))</content></entry>"
    }

    /// An Atom feed of registrations, as the listings answer. `url` is the feed's address; `registrationURL` gives
    /// each registration's address.
    public func feed(
        _ registrations: [Registration], url: String, updated: Date, registrationURL: (Registration) -> String
    ) -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"\(Self.atomNamespace)\">"
        xml += "<title type=\"text\">Registrations</title><id>\(XMLText.escape(url))</id>"
        xml += "<updated>\(Self.atomDate(updated))</updated><link rel=\"self\" href=\"\(XMLText.escapeAttribute(url))\"/>"
        for registration in registrations {
            xml += entryElement(registration, url: registrationURL(registration), declaringAtom: false)
        }
        return xml + "</feed>"
    }

    /// Atom dates as Azure writes them: UTC to the second, `2018-11-07T00:18:37Z`.
    static func atomDate(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: false).format(date)
    }
}
