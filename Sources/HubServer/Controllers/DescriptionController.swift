import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// `GET /{hub}/description` (Manage): what the hub is configured with and how its adapters are doing, without any
/// secret (no key strings, no credentials, no database password).
struct DescriptionController {
    let api: HubAPI

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.group().add(middleware: CallerRequirement.manage).get("description") { try await describe($0, $1) }
        return routes
    }

    /// The hub's description as the API reports it.
    struct HubDescription: Encodable {
        struct Adapter: Encodable {
            /// The adapter's implementation type.
            var type: String
            var platforms: [String]
            /// For each accepted format, the platforms it reaches.
            var formats: [String: [String]]
            /// For each platform, the native format its rendered templates are in.
            var templateFormats: [String: String]
            var maximumPayloadBytes: Int
            /// For each native format, a sample notification the console offers (from the adapter's descriptor).
            var samples: [String: Sample]
            /// `idle`, `delivering` or `failing`; see ``DescriptionController/adapterState(outcomes:)``.
            var state: String
            /// Outcome counts over the last ``DescriptionController/recentSeconds`` seconds, in this process.
            var recentOutcomes: [String: Int]
            var lastDeliveryTime: Date?
        }

        /// A sample notification of one format.
        struct Sample: Encodable {
            var body: String
            var headers: [String: String]
            var contentType: String
        }

        struct Key: Encodable {
            var name: String
            var rights: [String]
            /// Whether a secondary key is set for rotation.
            var hasSecondaryKey: Bool
        }

        struct Limits: Encodable {
            var tagsPerInstallation: Int
            var tagExpressionMaximumTags: Int
            var tagExpressionMaximumTagsOrOnly: Int
            var tagExpressionMaximumDepth: Int
            var maximumRequestBytes: Int
            var testSendDevices: Int
            var batchSendDevices: Int
        }

        struct Delivery: Encodable {
            var pageSize: Int
            var pagesInFlight: Int
            var batchSize: Int
            var concurrency: Int
            var parallelNotifications: Int
            var partitions: Int
            var leaseSeconds: Double
            var abandonAfterSeconds: Double
            var maximumAttempts: Int
            var rateLimitPerSecond: Double?
            var expiredChannelPolicy: String
            var platformConcurrency: [String: Int]
        }

        struct Storage: Encodable {
            var kind: String
            var path: String?
            var host: String?
            var database: String?
            var schema: String?
        }

        struct Configuration: Encodable {
            var loadedAt: Date
            var sha256: String
            var lastReload: ConfigurationStatus.Reload?
            var restartRequired: [String]
        }

        var name: String
        var configuration: Configuration
        var platforms: [String]
        var formats: [String]
        var adapters: [Adapter]
        var keys: [Key]
        var limits: Limits
        var delivery: Delivery
        var storage: Storage
        var securePush: Bool
        var feedbackWebhook: Bool
        var recentSeconds: Int
    }

    /// The span over which an adapter's state is judged.
    static let recentSeconds = 300

    /// Outcomes that say the platform, or the hub's access to it, is failing rather than one device.
    static let platformFailures: Set<Outcome> = [
        .invalidCredentials, .pnsUnavailable, .pnsUnreachable, .throttled, .abandoned,
    ]

    /// An adapter's state from its recent outcomes: `idle` without deliveries, `failing` when platform-side
    /// failures (credentials, unavailable, unreachable, throttled, abandoned) outnumber the other outcomes,
    /// `delivering` otherwise.
    static func adapterState(outcomes: [Outcome: Int]) -> String {
        let total = outcomes.values.reduce(0, +)
        guard total > 0 else { return "idle" }
        let failing = outcomes.filter { platformFailures.contains($0.key) }.values.reduce(0, +)
        return failing * 2 > total ? "failing" : "delivering"
    }

    func description(of hub: Hub, configuration: HubConfiguration) -> HubDescription {
        let now = api.clock.now()
        let recent = hub.worker.deliveryRates.snapshot(endingAt: now, seconds: Self.recentSeconds, step: Self.recentSeconds)
        let adapters = configuration.adapters.adapters.map { adapter -> HubDescription.Adapter in
            let descriptor = adapter.descriptor
            var outcomes: [Outcome: Int] = [:]
            for (key, values) in recent.series where descriptor.platforms.contains(key.platform) {
                outcomes[key.outcome, default: 0] += values.reduce(0, +)
            }
            let last = descriptor.platforms.compactMap { hub.worker.deliveryRates.lastDelivery(to: $0) }.max()
            return HubDescription.Adapter(
                type: String(describing: type(of: adapter)),
                platforms: descriptor.platforms.map(\.name).sorted(),
                formats: Dictionary(
                    descriptor.formats.map { ($0.key.name, $0.value.map(\.name)) }, uniquingKeysWith: { first, _ in first }),
                templateFormats: Dictionary(
                    descriptor.templateFormats.map { ($0.key.name, $0.value.name) }, uniquingKeysWith: { first, _ in first }),
                maximumPayloadBytes: descriptor.maximumPayloadBytes,
                samples: Dictionary(
                    descriptor.samples.map {
                        ($0.key.name, HubDescription.Sample(body: $0.value.body, headers: $0.value.headers, contentType: $0.value.contentType))
                    },
                    uniquingKeysWith: { first, _ in first }),
                state: Self.adapterState(outcomes: outcomes),
                recentOutcomes: Dictionary(uniqueKeysWithValues: outcomes.map { ($0.key.name, $0.value) }),
                lastDeliveryTime: last)
        }
        let storage: HubDescription.Storage =
            switch configuration.storage {
            case .memory: .init(kind: "memory")
            case .sqlite(let path): .init(kind: "sqlite", path: path)
            case .postgres(let settings):
                .init(kind: "postgres", host: "\(settings.host):\(settings.port)", database: settings.database, schema: settings.schema)
            }
        let delivery = configuration.delivery
        let limits = configuration.limits
        let status = api.status.snapshot
        return HubDescription(
            name: hub.name,
            configuration: .init(
                loadedAt: status.loadedAt, sha256: status.sha256, lastReload: status.lastReload,
                restartRequired: status.restartRequired),
            platforms: configuration.adapters.platforms.map(\.name),
            formats: configuration.adapters.formats.map(\.name),
            adapters: adapters,
            keys: configuration.keys.map { key in
                .init(
                    name: key.name, rights: AccessRight.allCases.filter { key.rights.contains($0) }.map(\.rawValue),
                    hasSecondaryKey: key.secondaryKey != nil)
            },
            limits: .init(
                tagsPerInstallation: limits.tagsPerInstallation,
                tagExpressionMaximumTags: limits.tagExpression.maximumTags,
                tagExpressionMaximumTagsOrOnly: limits.tagExpression.maximumTagsOrOnly,
                tagExpressionMaximumDepth: limits.tagExpression.maximumDepth,
                maximumRequestBytes: api.maximumRequestBytes, testSendDevices: 10, batchSendDevices: 1000),
            delivery: .init(
                pageSize: delivery.pageSize, pagesInFlight: delivery.pagesInFlight, batchSize: delivery.batchSize,
                concurrency: delivery.concurrency, parallelNotifications: delivery.parallelNotifications,
                partitions: delivery.partitions, leaseSeconds: delivery.leaseSeconds,
                abandonAfterSeconds: delivery.abandonAfterSeconds, maximumAttempts: delivery.maximumAttempts,
                rateLimitPerSecond: delivery.rateLimitPerSecond, expiredChannelPolicy: delivery.expiredChannelPolicy.rawValue,
                platformConcurrency: delivery.platformConcurrency),
            storage: storage,
            securePush: configuration.securePush != nil,
            feedbackWebhook: configuration.feedbackWebhook != nil,
            recentSeconds: Self.recentSeconds)
    }

    func describe(_ request: Request, _ context: HubContext) async throws -> Response {
        var response = try api.json(description(of: context.hub, configuration: context.configuration))
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
