import Foundation

/// The Baidu adapter's settings (`adapters: - type: baidu` in `hub.yaml`).
public struct BaiduSettings: Sendable, Equatable {
    /// Baidu Cloud Push's REST API host (the API answers on `http` and `https`).
    public static let defaultEndpoint = "https://api.tuisong.baidu.com"
    /// The most channel ids `push/batch_device` takes in one request.
    public static let maximumBatchSize = 10_000
    /// The longest `msg_expires` of `push/single_device` (7 days).
    public static let maximumMessageExpiry = 604_800

    /// The platform a Baidu app serves: in REST API 3.0 every app serves one (`device_type`).
    public enum DeviceType: Int, Sendable, Equatable {
        /// `device_type=3`.
        case android = 3
        /// `device_type=4`.
        case ios = 4
    }

    /// The app's api key (`apikey`).
    public var apiKey: String
    /// The app's secret key, which signs every request (never sent, never logged).
    public var secretKey: String
    /// The app's platform. Default Android.
    public var deviceType: DeviceType
    /// For an iOS app: `deploy_status` 1 (development) instead of 2 (production). Default false.
    public var development: Bool
    /// The REST API's base URL. Default ``defaultEndpoint``.
    public var endpoint: String
    /// An extra CA certificate (PEM) to trust besides the system's, for the emulator.
    public var caCertificatePEM: String?
    /// Channels per request: 1 sends each device its own `push/single_device` (Baidu then names each channel it
    /// cannot reach, so installations are pruned); more sends an Android app's fan-out through `push/batch_device`
    /// (which names none). 1 to 10,000. Default 1.
    public var batchSize: Int
    /// The `topic_id` of `push/batch_device` requests: 1 to 128 letters, digits and `_`. Default `notificationhub`.
    public var topicID: String
    /// Requests in flight at once across all callers. Default 64.
    public var maximumConcurrentRequests: Int
    /// HTTP clients requests are spread over. Default 4.
    public var connections: Int
    /// Deadline of each request. Default 30 seconds.
    public var requestTimeout: Duration
    /// Deadline of opening a connection. Default 10 seconds.
    public var connectTimeout: Duration

    /// Creates settings.
    public init(
        apiKey: String, secretKey: String, deviceType: DeviceType = .android, development: Bool = false,
        endpoint: String = BaiduSettings.defaultEndpoint, caCertificatePEM: String? = nil, batchSize: Int = 1,
        topicID: String = "notificationhub", maximumConcurrentRequests: Int = 1000, connections: Int = 16,
        requestTimeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10)
    ) {
        self.apiKey = apiKey
        self.secretKey = secretKey
        self.deviceType = deviceType
        self.development = development
        self.endpoint = endpoint
        self.caCertificatePEM = caCertificatePEM
        self.batchSize = batchSize
        self.topicID = topicID
        self.maximumConcurrentRequests = maximumConcurrentRequests
        self.connections = connections
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
    }

    /// Whether `text` is 1 to `limit` ASCII letters, digits and `_`.
    static func isWord(_ text: String, limit: Int) -> Bool {
        (1...limit).contains(text.utf8.count)
            && text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 }
    }

    /// What is wrong with these settings, by `hub.yaml` key, each saying what to fix; empty when they are usable.
    public var problems: [(key: String, message: String)] {
        var problems: [(key: String, message: String)] = []
        if !Self.isWord(apiKey, limit: 128) {
            problems.append(("apiKey", "apiKey is the app's api key from the Baidu push console: letters and digits"))
        }
        if secretKey.isEmpty || secretKey.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            problems.append(("secretKey", "secretKey is the app's secret key: printable ASCII, no spaces"))
        }
        if let url = URL(string: endpoint), ["https", "http"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false, url.query == nil, url.path.isEmpty || url.path == "/"
        {
        } else {
            problems.append(("endpoint", "endpoint must be the API's base URL without a path or query, e.g. \(Self.defaultEndpoint)"))
        }
        if !(1...Self.maximumBatchSize).contains(batchSize) {
            problems.append(("batchSize", "batchSize must be from 1 to \(Self.maximumBatchSize)"))
        }
        if !Self.isWord(topicID, limit: 128) {
            problems.append(("topicId", "topicId must be 1 to 128 letters, digits and _"))
        }
        if !(1...100_000).contains(maximumConcurrentRequests) {
            problems.append(("maximumConcurrentRequests", "maximumConcurrentRequests must be from 1 to 100000"))
        }
        if !(1...64).contains(connections) { problems.append(("connections", "connections must be from 1 to 64")) }
        if requestTimeout <= .zero { problems.append(("requestTimeoutSeconds", "requestTimeoutSeconds must be positive")) }
        if connectTimeout <= .zero { problems.append(("connectTimeoutSeconds", "connectTimeoutSeconds must be positive")) }
        return problems
    }

    /// Throws the first of ``problems``.
    public func check() throws(BaiduError) {
        if let problem = problems.first { throw BaiduError(.invalidSettings, "\(problem.key): \(problem.message)") }
    }
}
