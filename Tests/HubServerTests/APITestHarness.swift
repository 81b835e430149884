import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NotificationHub
import ServiceLifecycle

/// A hub with a recording adapter behind the real router, its worker running.
struct APITestHarness {
    static let keys = [
        AccessKey(name: "listen", rights: [.listen], primaryKey: "listen-key-0123456789"),
        AccessKey(name: "send", rights: [.send], primaryKey: "send-key-0123456789", secondaryKey: "send-key-secondary-0123"),
        AccessKey(name: "manage", rights: [.manage], primaryKey: "manage-key-0123456789"),
    ]

    /// The default logger: warnings and above, so thousands of requests do not flood the test output.
    static var quietLogger: Logger {
        var logger = Logger.forTest("test")
        logger.logLevel = .warning
        return logger
    }

    let runtime: HubRuntime
    let adapter: RecordingAdapter
    let adapters: [RecordingAdapter]
    let client: any TestClientProtocol

    static func token(_ keyName: String, resource: String = "http://localhost/demo", expiry: Date = Date() + 3600) -> String {
        let key = keys.first { $0.name == keyName }!
        return SharedAccessSignature.make(resource: resource, keyName: keyName, key: key.primaryKey, expiry: expiry)
    }

    /// The hub `demo` as it runs now.
    var hub: Hub { runtime.api.directory.entry("demo")!.hub }

    /// The hub's settings as the harness makes them (adapters made in code).
    static func settings(
        limits: HubLimits = HubLimits(), adapters: [RecordingAdapter], deviceAuthentication: DeviceAuthentication? = nil,
        listenKey: ListenKeyPolicy = ListenKeyPolicy(), userBoundTags: UserBoundTags = UserBoundTags(),
        securePush: SecurePushConfiguration? = nil
    ) -> HubSettings {
        HubSettings(
            name: "demo", keys: keys, storage: .memory, limits: limits,
            delivery: DeliveryConfiguration(initialBackoffSeconds: 0.01), adapters: adapters.map { AdapterSettings(adapter: $0) },
            deviceAuthentication: deviceAuthentication, userBoundTags: userBoundTags, listenKey: listenKey,
            securePush: securePush)
    }

    /// Runs `body` against hubs built by the same composition root as `hub serve` (``HubRuntime``), over the real
    /// router in process.
    static func run<T: Sendable>(
        configuration: HubsConfiguration, adapters: [RecordingAdapter] = [], clock: any WallClock = SystemWallClock(),
        logger: Logger = APITestHarness.quietLogger, _ body: @Sendable (APITestHarness) async throws -> T
    ) async throws -> T {
        // The process knows Azure's descriptions of every built-in platform, as `hub serve` does.
        let runtime = try await HubRuntime(
            configuration: configuration,
            options: .init(clock: clock, logger: logger, registrationFormats: AzureRegistrationFormats.all))
        let app = Application(router: runtime.api.makeRouter(), logger: logger)
        let services = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: runtime.services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }, logger: logger))
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await services.run()
                return nil
            }
            do {
                let result = try await app.test(.router) { client in
                    try await body(
                        APITestHarness(
                            runtime: runtime, adapter: adapters.first ?? RecordingAdapter(), adapters: adapters,
                            client: client))
                }
                await services.triggerGracefulShutdown()
                try await group.waitForAll()
                return result
            } catch {
                await services.triggerGracefulShutdown()
                try? await group.waitForAll()
                throw error
            }
        }
    }

    static func run<T: Sendable>(
        limits: HubLimits = HubLimits(), adapters: [RecordingAdapter] = [RecordingAdapter(limit: 2000)],
        deviceAuthentication: DeviceAuthentication? = nil, listenKey: ListenKeyPolicy = ListenKeyPolicy(),
        userBoundTags: UserBoundTags = UserBoundTags(), securePush: SecurePushConfiguration? = nil,
        console: Bool = false, clock: any WallClock = SystemWallClock(), logger: Logger = APITestHarness.quietLogger,
        _ body: @Sendable (APITestHarness) async throws -> T
    ) async throws -> T {
        let settings = settings(
            limits: limits, adapters: adapters, deviceAuthentication: deviceAuthentication, listenKey: listenKey,
            userBoundTags: userBoundTags, securePush: securePush)
        return try await run(
            configuration: HubsConfiguration(server: ServerConfiguration(console: console), hubs: [settings]),
            adapters: adapters, clock: clock, logger: logger, body)
    }

    /// A request signed with `key`'s token. It asks for JSON (`Accept: application/json`, as the console does)
    /// unless `headers` name an `Accept` or `acceptJSON` is false (Azure's XML, what Azure's SDKs get).
    @discardableResult
    func request(
        _ method: HTTPRequest.Method, _ uri: String, key: String? = "manage", headers: HTTPFields = [:],
        body: String? = nil, acceptJSON: Bool = true
    ) async throws -> TestResponse {
        var headers = headers
        if let key { headers[.authorization] = Self.token(key) }
        if acceptJSON, headers[.accept] == nil { headers[.accept] = "application/json" }
        return try await client.execute(
            uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }

    /// Waits (bounded) until the hub's delivery rates have counted `total` deliveries in the second of `time`: the
    /// worker counts a notification's deliveries once their commit returns, just after its final state is visible.
    func waitForCounted(_ total: Int, at time: Date) async throws {
        for _ in 0..<3000 {
            let snapshot = hub.worker.deliveryRates.snapshot(endingAt: time + 1, seconds: 2)
            if snapshot.series.values.reduce(0, { $0 + $1.reduce(0, +) }) >= total { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw HubError(.conflict, "the deliveries were not counted")
    }

    /// Polls telemetry until the notification reaches a final state (bounded generously for loaded machines).
    func waitForFinal(_ id: String) async throws -> NotificationRecord {
        for _ in 0..<3000 {
            if let record = try await hub.sends.record(id: id), record.state.isFinal { return record }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw HubError(.conflict, "notification \(id) did not finish")
    }

    static func installationJSON(_ id: String, tags: [String] = [], handle: String? = nil, extra: String = "") -> String {
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"installationId":"\#(id)","platform":"test","pushChannel":"\#(handle ?? "dev-\(id)")","tags":[\#(tagList)]\#(extra)}"#
    }
}

extension TestResponse {
    /// The error code of an error body: JSON's `error.code`, or the `<ErrorCode>` of Azure's XML `<Error>`.
    var errorCode: String? {
        if let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: [String: String]] {
            return object["error"]?["code"]
        }
        return xmlElement("ErrorCode")
    }

    /// The message of an error body: JSON's `error.message`, or the `<Detail>` of Azure's XML `<Error>`.
    var errorMessage: String? {
        if let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: [String: String]] {
            return object["error"]?["message"]
        }
        return xmlElement("Detail")
    }

    /// The text of the first `<name>` element of an XML body, unescaped.
    func xmlElement(_ name: String) -> String? {
        let text = String(buffer: body)
        guard let start = text.range(of: "<\(name)>"), let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex)
        else { return nil }
        return String(text[start.upperBound..<end.lowerBound]).replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&apos;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
    }

    var text: String { String(buffer: body) }

    var json: [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
    }
}
