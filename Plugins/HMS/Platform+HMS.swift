import AdapterKit

extension Platform {
    /// Huawei Push Kit (HMS Core push), as installations name it: `"platform": "hms"`.
    public static let hms = Platform("hms")
}

extension NotificationFormat {
    /// A Push Kit message (`ServiceBusNotification-Format: hms`): `{"message": {...}}` as Huawei's
    /// `messages:send` takes it, without `token`, `topic` or `condition` (the hub targets the devices).
    public static let hms = NotificationFormat("hms")
}
