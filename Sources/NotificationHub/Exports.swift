// The adapter kit's types (platforms, formats, deliveries, outcomes, the adapter protocol, the configuration node,
// `HubError`) are part of this library's API: code that imports `NotificationHub` sees them without importing
// `AdapterKit`.
@_exported import AdapterKit

extension Notification {
    /// The body, format and headers, as adapters check them at send time.
    public var content: NotificationContent {
        NotificationContent(format: format, body: body, headers: headers)
    }
}

extension PlatformAdapter {
    /// Checks a notification's content with the adapter (see ``PlatformAdapter/validate(notification:)``).
    public func validate(notification: Notification) throws(HubError) {
        try validate(notification: notification.content)
    }
}
