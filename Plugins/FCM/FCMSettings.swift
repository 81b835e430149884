/// The FCM adapter's settings (`adapters: - type: fcm` in `hub.yaml`): the service account (its JSON, a secret) and
/// the client settings.
public struct FCMSettings: Sendable, Equatable {
    /// The service account's JSON document.
    public var serviceAccountJSON: String
    /// The HTTP client settings.
    public var configuration: FCMAdapter.Configuration

    /// Creates settings.
    public init(serviceAccountJSON: String, configuration: FCMAdapter.Configuration = FCMAdapter.Configuration()) {
        self.serviceAccountJSON = serviceAccountJSON
        self.configuration = configuration
    }
}
