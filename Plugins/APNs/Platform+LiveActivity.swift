import AdapterKit

extension Platform {
    /// An app's push-to-start token (ActivityKit's `pushToStartTokenUpdates`, iOS 17.2+), one per installation:
    /// the hub starts a Live Activity on the device with it. Registered through
    /// `PUT /{hub}/installations/{id}/liveactivities/pushtostart`, never as an installation of its own.
    public static let apnsPushToStart = Platform("apnspushtostart")
    /// One Live Activity's update token (ActivityKit's `pushTokenUpdates`): the hub updates and ends that activity
    /// with it. Registered through `PUT /{hub}/installations/{id}/liveactivities/{activityId}`.
    public static let apnsActivity = Platform("apnsactivity")
}

extension NotificationFormat {
    /// A Live Activity push that updates or ends activities (`aps.event` `update` or `end`), delivered to their
    /// update tokens (``Platform/apnsActivity``) with `apns-push-type: liveactivity`.
    public static let liveActivity = NotificationFormat("liveactivity")
    /// A Live Activity push that starts an activity (`aps.event` `start`), delivered to push-to-start tokens
    /// (``Platform/apnsPushToStart``) with `apns-push-type: liveactivity`.
    public static let liveActivityStart = NotificationFormat("liveactivitystart")
}
