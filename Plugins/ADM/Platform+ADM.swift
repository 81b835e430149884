import AdapterKit

extension Platform {
    /// Amazon Device Messaging, as installations name it (Azure's `"platform": "adm"`).
    public static let adm = Platform("adm")
}

extension NotificationFormat {
    /// An ADM message (`ServiceBusNotification-Format: adm`): `{"data": {...}, "consolidationKey", "expiresAfter",
    /// "md5"}` as Amazon's send API takes it (see ``ADMMessage``).
    public static let adm = NotificationFormat("adm")
}
