import NotificationHub

/// Azure's registration descriptions of the built-in platforms, as their plugins declare them, for tests of the core
/// that stand in for those plugins (``RecordingAdapter``) or read the hub's answers. `HubServerTests` checks that
/// these equal the plugins' own declarations.
public enum AzureRegistrationFormats {
    /// Apple, Gcm, FcmV1, Windows and Browser.
    public static let all: [RegistrationFormat] = [
        RegistrationFormat(
            platform: .apns, prefix: "Apple", channel: .element("DeviceToken"), filterMatching: .anyCase,
            templateElements: [
                .expiry, .templateName, .priority(header: "apns-priority", values: ["10", "5", "1"]),
                .headers(list: "ApnsHeaders", item: "ApnsHeader", writtenWhenEmpty: false),
            ]),
        RegistrationFormat(platform: .gcm, prefix: "Gcm", channel: .element("GcmRegistrationId")),
        RegistrationFormat(platform: .fcmv1, prefix: "FcmV1", channel: .element("FcmV1RegistrationId")),
        RegistrationFormat(
            platform: .wns, prefix: "Windows", channel: .element("ChannelUri"),
            templateElements: [.headers(list: "WnsHeaders", item: "WnsHeader", writtenWhenEmpty: true), .templateName]),
        RegistrationFormat(
            platform: Platform("browser"), prefix: "Browser",
            channel: .object([
                .init(element: "Endpoint", key: "endpoint"), .init(element: "P256DH", key: "p256dh"),
                .init(element: "Auth", key: "auth"),
            ])),
    ]
}

extension RegistrationXML {
    /// A reader and writer of ``AzureRegistrationFormats/all``.
    public static let azure = RegistrationXML(formats: AzureRegistrationFormats.all)
}
