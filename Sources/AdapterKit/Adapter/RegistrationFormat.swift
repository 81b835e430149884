import Foundation

/// How one platform's registrations are written in Azure's Atom XML: the description elements, where the device
/// handle goes, which template elements follow `BodyTemplate` (in Azure's order), and how a `$filter` on the handle
/// matches. An adapter declares it in ``PlatformDescriptor/registrationFormats``; a platform Azure has no
/// registration description for declares none, and its devices register through installations only.
///
/// ```swift
/// RegistrationFormat(
///     platform: .apns, prefix: "Apple", channel: .element("DeviceToken"), filterMatching: .anyCase,
///     templateElements: [.expiry, .templateName, .priority(header: "apns-priority", values: ["10", "5", "1"]),
///         .headers(list: "ApnsHeaders", item: "ApnsHeader", writtenWhenEmpty: false)])
/// ```
public struct RegistrationFormat: Sendable, Hashable {
    /// Where a description carries the device handle.
    public enum Channel: Sendable, Hashable {
        /// One element holding a string handle, e.g. `DeviceToken`.
        case element(String)
        /// Several elements, each one string member of an object handle (Web Push: `Endpoint`, `P256DH`, `Auth`
        /// stored as `{"endpoint", "p256dh", "auth"}`).
        case object([ObjectMember])
        /// Several elements whose texts, joined by `separator` in order, are one string handle (e.g. a user id and a
        /// channel id stored as `user-channel`). Every element but the last must not hold the separator, so a stored
        /// handle splits back at its first separators into exactly the texts that were registered.
        case joined([String], separator: String)
    }

    /// One element of an object handle and the member it is stored as.
    public struct ObjectMember: Sendable, Hashable {
        /// The element's name, e.g. `Endpoint`.
        public var element: String
        /// The member's key in the stored handle, e.g. `endpoint`.
        public var key: String

        /// Creates a member.
        public init(element: String, key: String) {
            self.element = element
            self.key = key
        }
    }

    /// How a `$filter` literal is compared with stored handles.
    public enum HandleMatching: Sendable, Hashable {
        /// Exactly as given.
        case exact
        /// As given, upper-cased or lower-cased (hex device tokens).
        case anyCase
    }

    /// An element a template description of this platform may hold after `BodyTemplate`.
    public enum TemplateElement: Sendable, Hashable {
        /// `Expiry`: an expression for the notification's expiry.
        case expiry
        /// `TemplateName`.
        case templateName
        /// `Priority`, one of `values`, sent as the header `header`.
        case priority(header: String, values: [String])
        /// A list of headers sent with the rendered notification: `<list><item><Header>…</Header><Value>…</Value>
        /// </item></list>`; `writtenWhenEmpty` when Azure's SDKs need the element even without headers.
        case headers(list: String, item: String, writtenWhenEmpty: Bool)
        /// An element other than `Priority` whose value, one of `values`, is sent as the header `header` (a
        /// template form has at most one such element, or `Priority`).
        case headerValue(element: String, header: String, values: [String])

        /// The element's name.
        public var name: String {
            switch self {
            case .expiry: "Expiry"
            case .templateName: "TemplateName"
            case .priority: "Priority"
            case .headers(let list, _, _): list
            case .headerValue(let element, _, _): element
            }
        }
    }

    /// The platform registrations of this format are delivered by.
    public var platform: Platform
    /// The prefix of the description element names, e.g. `Apple` for `AppleRegistrationDescription`.
    public var prefix: String
    /// Where the device handle goes.
    public var channel: Channel
    /// How a `$filter` on the handle's element (e.g. `DeviceToken eq '…'`) matches.
    public var filterMatching: HandleMatching
    /// The template elements after `BodyTemplate`, in the order Azure writes them.
    public var templateElements: [TemplateElement]

    /// Creates a format.
    public init(
        platform: Platform, prefix: String, channel: Channel, filterMatching: HandleMatching = .exact,
        templateElements: [TemplateElement] = [.templateName]
    ) {
        self.platform = platform
        self.prefix = prefix
        self.channel = channel
        self.filterMatching = filterMatching
        self.templateElements = templateElements
    }

    /// The native description's element name, e.g. `AppleRegistrationDescription`.
    public var nativeElement: String { prefix + "RegistrationDescription" }
    /// The template description's element name, e.g. `AppleTemplateRegistrationDescription`.
    public var templateElement: String { prefix + "TemplateRegistrationDescription" }

    /// The channel's element names, in order; these are also the `$filter` fields of the format.
    public var channelElements: [String] {
        switch channel {
        case .element(let name): [name]
        case .object(let members): members.map(\.element)
        case .joined(let elements, _): elements
        }
    }

    /// The texts of a joined handle's elements (``Channel/joined(_:separator:)``), split at its first separators; nil
    /// when the channel is not joined or the handle does not hold one part per element, each non-empty.
    public func parts(ofJoined handle: String) -> [String]? {
        guard case .joined(let elements, let separator) = channel, !elements.isEmpty, !separator.isEmpty else { return nil }
        var parts: [String] = []
        var rest = Substring(handle)
        for _ in elements.dropLast() {
            guard let range = rest.range(of: separator) else { return nil }
            parts.append(String(rest[..<range.lowerBound]))
            rest = rest[range.upperBound...]
        }
        parts.append(String(rest))
        return parts.allSatisfy { !$0.isEmpty } ? parts : nil
    }

    /// The handle of a joined channel's element texts, in order; throws when a text is empty or one but the last
    /// holds the separator (it would not split back into the same texts).
    public func joinedHandle(_ parts: [String]) throws(HubError) -> String {
        guard case .joined(let elements, let separator) = channel, parts.count == elements.count else {
            throw HubError(.invalidRegistration, "\(nativeElement) takes \(channelElements.joined(separator: ", "))")
        }
        for (element, part) in zip(elements, parts) where part.isEmpty {
            throw HubError(.invalidRegistration, "<\(nativeElement)> needs a non-empty <\(element)>")
        }
        for (element, part) in zip(elements.dropLast(), parts.dropLast()) where part.contains(separator) {
            throw HubError(
                .invalidRegistration,
                "<\(element)> must not hold '\(separator)': the handle is \(elements.joined(separator: " + '\(separator)' + ")) and splits at its first '\(separator)'")
        }
        return parts.joined(separator: separator)
    }

    /// The header list elements of the template form (e.g. `ApnsHeaders`), with their item element names.
    public var headerLists: [(list: String, item: String)] {
        templateElements.compactMap { if case .headers(let list, let item, _) = $0 { (list, item) } else { nil } }
    }

    /// The element sent as a header (`Priority`, or a ``TemplateElement/headerValue(element:header:values:)``), its
    /// header and accepted values, when the template form has one.
    public var priority: (element: String, header: String, values: [String])? {
        for element in templateElements {
            switch element {
            case .priority(let header, let values): return ("Priority", header, values)
            case .headerValue(let name, let header, let values): return (name, header, values)
            default: continue
            }
        }
        return nil
    }
}

/// A sample notification of one format, which the console offers as a starting point.
public struct NotificationSample: Sendable, Hashable {
    /// The body.
    public var body: String
    /// Headers to send with it, e.g. `X-WNS-Type: wns/toast`.
    public var headers: [String: String]
    /// The body's `Content-Type`.
    public var contentType: String

    /// Creates a sample.
    public init(body: String, headers: [String: String] = [:], contentType: String = "application/json;charset=utf-8") {
        self.body = body
        self.headers = headers
        self.contentType = contentType
    }
}
