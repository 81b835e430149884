import AdapterKit

extension Platform {
    /// Browsers, through their push services (Azure's `browser` platform).
    public static let browser = Platform("browser")
}

extension NotificationFormat {
    /// A Web Push payload (Azure's `browser` format): any bytes up to 3993, encrypted for each browser.
    public static let browser = NotificationFormat("browser")
}
