import AdapterKit

extension Platform {
    /// A broadcast channel the hub manages for one tag (Apple's broadcast push, iOS 18): its push channel is Apple's
    /// channel id. Rows of this platform are made only by `POST /{hub}/liveactivities/channels`.
    public static let apnsBroadcast = Platform("apnsbroadcast")
}

extension NotificationFormat {
    /// A Live Activity update or end (`ServiceBusNotification-Format: liveactivity`): an ActivityKit payload
    /// (`aps.event`, `aps.timestamp`, `aps.content-state`, …) sent with `apns-push-type: liveactivity`.
    public static let liveActivity = NotificationFormat("liveactivity")
}
