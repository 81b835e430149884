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

        /// The element's name.
        public var name: String {
            switch self {
            case .expiry: "Expiry"
            case .templateName: "TemplateName"
            case .priority: "Priority"
            case .headers(let list, _, _): list
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
        }
    }

    /// The header list elements of the template form (e.g. `ApnsHeaders`), with their item element names.
    public var headerLists: [(list: String, item: String)] {
        templateElements.compactMap { if case .headers(let list, let item, _) = $0 { (list, item) } else { nil } }
    }

    /// The priority element's header and accepted values, when the template form has one.
    public var priority: (header: String, values: [String])? {
        for element in templateElements { if case .priority(let header, let values) = element { return (header, values) } }
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
