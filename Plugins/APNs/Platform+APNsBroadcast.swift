import AdapterKit

extension Platform {
    /// A broadcast channel the hub manages for one tag (Apple's broadcast push, iOS 18): its push channel is Apple's
    /// channel id, and `liveactivity` sends reach it. Rows of this platform are made only by
    /// `POST /{hub}/liveactivities/channels`.
    public static let apnsBroadcast = Platform("apnsbroadcast")
}
