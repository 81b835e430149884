/// How one platform's registrations are written in Azure's Atom XML: the description elements, where the device
/// handle goes, and which template elements follow `BodyTemplate`, in Azure's order.
///
/// Adding a platform is one entry in ``all``.
public struct RegistrationFormat: Sendable, Hashable {
    /// Where a description carries the device handle.
    public enum Channel: Sendable, Hashable {
        /// One element holding a string handle, e.g. `DeviceToken`.
        case element(String)
        /// Web push: `Endpoint`, `P256DH` and `Auth` elements, stored as the channel object
        /// `{"endpoint", "p256dh", "auth"}`.
        case browser
    }

    /// An element a template description of this platform may hold after `BodyTemplate`.
    public enum TemplateElement: String, Sendable, Hashable {
        case expiry = "Expiry"
        case templateName = "TemplateName"
        case priority = "Priority"
        case apnsHeaders = "ApnsHeaders"
        case wnsHeaders = "WnsHeaders"
    }

    /// The platform registrations of this format are delivered by.
    public var platform: Platform
    /// The prefix of the description element names, e.g. `Apple` for `AppleRegistrationDescription`.
    public var prefix: String
    /// Where the device handle goes.
    public var channel: Channel
    /// The template elements after `BodyTemplate`, in the order Azure writes them.
    public var templateElements: [TemplateElement]

    /// The native description's element name, e.g. `AppleRegistrationDescription`.
    public var nativeElement: String { prefix + "RegistrationDescription" }
    /// The template description's element name, e.g. `AppleTemplateRegistrationDescription`.
    public var templateElement: String { prefix + "TemplateRegistrationDescription" }

    /// The channel's element names, in order.
    public var channelElements: [String] {
        switch channel {
        case .element(let name): [name]
        case .browser: ["Endpoint", "P256DH", "Auth"]
        }
    }

    /// Every format the hub reads and writes.
    public static let all: [RegistrationFormat] = [
        RegistrationFormat(
            platform: .apns, prefix: "Apple", channel: .element("DeviceToken"),
            templateElements: [.expiry, .templateName, .priority, .apnsHeaders]),
        RegistrationFormat(platform: .gcm, prefix: "Gcm", channel: .element("GcmRegistrationId"), templateElements: [.templateName]),
        RegistrationFormat(
            platform: .fcmv1, prefix: "FcmV1", channel: .element("FcmV1RegistrationId"), templateElements: [.templateName]),
        RegistrationFormat(
            platform: .wns, prefix: "Windows", channel: .element("ChannelUri"), templateElements: [.wnsHeaders, .templateName]),
        RegistrationFormat(platform: Platform("browser"), prefix: "Browser", channel: .browser, templateElements: [.templateName]),
    ]

    /// The format of a description element name, and whether it is the template form.
    public static func named(_ element: String) -> (format: RegistrationFormat, template: Bool)? {
        for format in all {
            if element == format.nativeElement { return (format, false) }
            if element == format.templateElement { return (format, true) }
        }
        return nil
    }

    /// The format registrations of `platform` use, if the hub can describe that platform.
    public static func of(_ platform: Platform) -> RegistrationFormat? {
        all.first { $0.platform == platform }
    }

    /// Every description element name, for error messages.
    public static var elementNames: [String] { all.flatMap { [$0.nativeElement, $0.templateElement] } }
}
