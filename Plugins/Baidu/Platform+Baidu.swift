import AdapterKit

extension Platform {
    /// Baidu Cloud Push, as installations name it (Azure's `"platform": "baidu"`).
    public static let baidu = Platform("baidu")
}

extension NotificationFormat {
    /// A Baidu Cloud Push message (`ServiceBusNotification-Format: baidu`): the JSON text of the REST API's `msg`
    /// parameter, with `X-Baidu-Message-Type` (`0` pass-through message, `1` notification) choosing `msg_type`, as
    /// Azure's `BaiduNotification` sends it (see ``BaiduMessage``).
    public static let baidu = NotificationFormat("baidu")
}
