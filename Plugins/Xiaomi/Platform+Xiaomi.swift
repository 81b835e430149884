import AdapterKit

extension Platform {
    /// Xiaomi Push (Mi Push), as installations name it (Azure's `"platform": "xiaomi"`).
    public static let xiaomi = Platform("xiaomi")
}

extension NotificationFormat {
    /// A Mi Push message (`ServiceBusNotification-Format: xiaomi`): a JSON object of Mi Push's send parameters,
    /// `{"title", "description", "payload", "pass_through", "notify_type", "time_to_live", "time_to_send",
    /// "notify_id", "extra": {...}}`, which the adapter sends as form fields (see ``XiaomiMessage``).
    public static let xiaomi = NotificationFormat("xiaomi")
}
