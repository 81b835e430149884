import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NotificationHub
import Prometheus
import ServiceLifecycle
import Synchronization

/// The composition root: builds a process's running services — hubs and their stores, adapters, feedback webhooks,
/// the API and its HTTP server — from configuration values, and applies a new configuration while they run.
///
/// `hub serve`, the API tests and the benchmarks build their hubs through it:
///
/// ```swift
/// let runtime = try await HubRuntime(configuration: configuration, options: .init(logger: logger))
/// let application = try runtime.makeApplication()
/// try await ServiceGroup(services: runtime.services + [application], logger: logger).run()
/// // later, with the file read again:
/// let report = await runtime.apply(newConfiguration)
/// ```
///
/// ``services`` start in order and stop in reverse: adapters, then hub workers, then webhooks; the application goes
/// after them, so the API stops accepting before the workers stop, and adapters outlive the workers that use them.
///
/// ``apply(_:)`` builds everything the new configuration needs first (adapters whose settings changed, stores of
/// added hubs); if anything fails nothing changes. Then, per hub and at once: keys, limits, device authentication and
/// the delivery settings apply to the next request and the next claimed notification; adapters whose settings are
/// unchanged are kept (with their connections), the others replaced — notifications already claimed finish on the old
/// adapter, which is shut down once they have; an added hub starts serving; a removed hub answers 404, and its worker
/// hands its leases back once its requests in flight are answered. What cannot change live (``ConfigurationChanges``:
/// the `server` section, the emulators, a hub's storage) keeps its running value and is reported.
public final class HubRuntime: Sendable {
    /// What the runtime is built with besides the configuration.
    public struct Options: Sendable {
        /// This node's name among the hubs' nodes.
        public var nodeName: String
        /// The clock of hubs and the API.
        public var clock: any WallClock
        /// The logger services log to.
        public var logger: Logger
        /// The Prometheus registry `/metrics` reports, if any.
        public var metrics: PrometheusCollectorRegistry?
        /// The HTTP client feedback webhooks post with.
        public var webhookClient: HTTPClient
        /// The registration descriptions of every platform plugin the process has (``AdapterRegistry/registrationFormats``):
        /// a description of one a hub does not serve is answered `UnknownPlatform`.
        public var registrationFormats: [RegistrationFormat]

        /// Options; the node name defaults to ``HubNode/defaultName``.
        public init(
            nodeName: String = HubNode.defaultName, clock: any WallClock = SystemWallClock(), logger: Logger,
            metrics: PrometheusCollectorRegistry? = nil, webhookClient: HTTPClient = .shared,
            registrationFormats: [RegistrationFormat] = []
        ) {
            self.registrationFormats = registrationFormats
            self.nodeName = nodeName
            self.clock = clock
            self.logger = logger
            self.metrics = metrics
            self.webhookClient = webhookClient
        }
    }

    /// What applying a configuration did.
    public struct Report: Sendable {
        /// `applied`, `rejected` or `unchanged`.
        public var result: String
        /// Why it was rejected (problems with file:line:column; never a secret).
        public var problems: [ConfigurationProblem]
        /// The parts that changed, applied and waiting for a restart.
        public var changes: ConfigurationChanges
        /// How long it took.
        public var duration: Duration
    }

    /// One running adapter.
    struct RunningAdapter: Sendable {
        var settings: AdapterSettings
        var adapter: any PlatformAdapter
        var hosted: ServiceHost.Hosted
    }

    /// One running hub and the services made for it.
    struct Unit: Sendable {
        var hub: Hub
        var adapters: [RunningAdapter]
        var worker: ServiceHost.Hosted
        var webhook: ServiceHost.Hosted?
    }

    /// The API over the hubs.
    public let api: HubAPI
    /// What configuration runs and how the last reload went.
    public let status: ConfigurationStatus
    let options: Options
    let adapterHost: ServiceHost
    let workerHost: ServiceHost
    let webhookHost: ServiceHost
    /// The hubs' tracing and the service exporting its spans, when `observability.tracing` is configured.
    let tracing: DeliveryTracing?
    let tracingService: (any Service)?
    private let state: Mutex<(running: HubsConfiguration, units: [String: Unit])>
    /// One apply at a time.
    private let applying = AsyncSemaphore(permits: 1)

    /// Opens every hub's store and makes its adapters (none started: ``services`` run them).
    ///
    /// - Throws: ``ConfigurationError`` when an adapter cannot be made from its settings, or the store's error.
    public init(configuration: HubsConfiguration, options: Options) async throws {
        self.options = options
        // Once, before any hub opens its files (a node serving many hubs holds several per hub) and before the
        // server accepts connections.
        HubApplication.raiseFileDescriptorLimit(
            toAtLeast: configuration.server.maximumConnections + 256, logger: options.logger)
        let adapterHost = ServiceHost(logger: options.logger)
        let workerHost = ServiceHost(logger: options.logger)
        let webhookHost = ServiceHost(logger: options.logger)
        self.adapterHost = adapterHost
        self.workerHost = workerHost
        self.webhookHost = webhookHost
        let now = options.clock.now()
        let status = ConfigurationStatus(sha256: configuration.sha256, loadedAt: now)
        status.parts = configuration.fingerprints
        self.status = status
        var units: [String: Unit] = [:]
        var hubs: [Hub] = []
        // Off unless observability.tracing is configured: no tracer, no spans, no exporter.
        let tracing = try configuration.tracing.map { try HubTracing.make($0, logger: options.logger) }
        self.tracing = tracing?.tracing
        self.tracingService = tracing?.service
        for settings in configuration.hubs {
            let adapters = try Self.makeAdapters(settings, reusing: [], logger: options.logger)
            let hub = try await Hub.open(
                configuration: HubConfiguration(settings: settings, adapters: try AdapterSet(adapters.map(\.adapter), knownRegistrationFormats: options.registrationFormats)),
                clock: options.clock, nodeName: options.nodeName, tracing: tracing?.tracing, logger: options.logger)
            hubs.append(hub)
            let worker = workerHost.start([hub])
            let running = adapters.map {
                RunningAdapter(settings: $0.settings, adapter: $0.adapter, hosted: adapterHost.start([$0.adapter]))
            }
            units[settings.name] = Unit(
                hub: hub, adapters: running, worker: worker,
                webhook: Self.startWebhook(for: hub, host: webhookHost, options: options))
        }
        api = try HubAPI(
            directory: HubDirectory(hubs: hubs), maximumRequestBytes: configuration.server.maximumRequestBytes,
            maximumBatchRequestBytes: configuration.server.maximumBatchRequestBytes, metrics: options.metrics,
            console: configuration.server.console, status: status, clock: options.clock)
        state = Mutex((configuration, units))
    }

    /// The long-lived services, in start order: adapters, hub workers, feedback webhooks, jobs. Run them in one
    /// `ServiceGroup` before the application (``makeApplication(onServerRunning:)``).
    public var services: [any Service] {
        // The span exporter starts first and stops last, so the spans of everything stopping before it are sent.
        (tracingService.map { [$0] } ?? []) + [adapterHost, workerHost, webhookHost, api.directory.operations]
    }

    /// The hubs served now.
    public var hubs: [Hub] { api.directory.hubs }

    /// The configuration running now (parts that need a restart keep their value from the start).
    public var configuration: HubsConfiguration { state.withLock { $0.running } }

    /// The HTTP server of the API on the `server:` settings.
    public func makeApplication(onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }) throws -> any Service {
        try HubApplication.make(api: api, server: configuration.server, logger: options.logger, onServerRunning: onServerRunning)
    }

    // MARK: Applying a configuration

    /// Records a configuration that could not be read: nothing changes.
    @discardableResult
    public func reject(_ problems: [ConfigurationProblem], started: ContinuousClock.Instant = .now) -> Report {
        for problem in problems {
            options.logger.error("configuration reload rejected", metadata: ["config.problem": "\(problem)"])
        }
        let report = Report(result: "rejected", problems: problems, changes: ConfigurationChanges(), duration: .now - started)
        status.record(
            .init(
                result: report.result, at: options.clock.now(), problems: problems.count, applied: [], restartRequired: [],
                seconds: Self.seconds(report.duration)))
        options.logger.warning(
            "the configuration was not changed: the new file has problems; the running configuration stays",
            metadata: ["config.problems": "\(problems.count)"])
        return report
    }

    /// Applies a new configuration as described on ``HubRuntime``: all of it, or — when something cannot be built —
    /// none of it.
    @discardableResult
    public func apply(_ new: HubsConfiguration, started: ContinuousClock.Instant = .now) async -> Report {
        await applying.acquire()
        defer { applying.release() }
        let (running, units) = state.withLock { ($0.running, $0.units) }
        let changes = ConfigurationChanges(from: running.fingerprints, to: new.fingerprints)
        if changes.isEmpty {
            let report = Report(result: "unchanged", problems: [], changes: changes, duration: .now - started)
            status.record(
                .init(
                    result: report.result, at: options.clock.now(), problems: 0, applied: [], restartRequired: [],
                    seconds: Self.seconds(report.duration)),
                sha256: new.sha256)
            options.logger.info("configuration reloaded: nothing changed")
            return report
        }

        // What needs a restart keeps its running value.
        var target = new
        target.server = running.server
        target.emulators = running.emulators
        target.tracing = running.tracing
        for index in target.hubs.indices {
            if let old = running.hub(named: target.hubs[index].name) { target.hubs[index].storage = old.storage }
        }

        // Build everything first: nothing is changed until all of it exists.
        var built: [String: (settings: HubSettings, adapters: [MadeAdapter], set: AdapterSet, entry: HubDirectory.Entry?)] = [:]
        var opened: [Hub] = []
        var problems: [ConfigurationProblem] = []
        for settings in target.hubs where units[settings.name] == nil || running.hub(named: settings.name) != settings {
            do {
                let existing = units[settings.name]?.adapters ?? []
                let adapters = try Self.makeAdapters(settings, reusing: existing, logger: options.logger)
                let set = try AdapterSet(adapters.map(\.adapter), knownRegistrationFormats: options.registrationFormats)
                let configuration = HubConfiguration(settings: settings, adapters: set)
                if let unit = units[settings.name] {
                    let old = unit.hub.configuration
                    let entry: HubDirectory.Entry? =
                        old.deviceAuthentication != settings.deviceAuthentication
                            || old.limits.installationWrites != settings.limits.installationWrites
                        ? try HubDirectory.Entry(
                            hub: unit.hub,
                            verifier: settings.deviceAuthentication.map(DeviceTokenVerifier.init),
                            writeLimiter: InstallationWriteLimiter(limits: settings.limits.installationWrites))
                        : nil
                    built[settings.name] = (settings, adapters, set, entry)
                } else {
                    let hub = try await Hub.open(
                        configuration: configuration, clock: options.clock, nodeName: options.nodeName,
                        tracing: tracing, logger: options.logger)
                    opened.append(hub)
                    built[settings.name] = (settings, adapters, set, try HubDirectory.Entry(hub: hub))
                }
            } catch let error as ConfigurationError {
                problems += error.problems
            } catch {
                problems.append(
                    ConfigurationProblem(
                        file: new.file, line: 0, column: 0, keyPath: "hubs.\(settings.name)", message: Self.describe(error)))
            }
        }
        if !problems.isEmpty {
            for hub in opened { try? await hub.close() }
            return reject(problems, started: started)
        }

        // Apply: nothing below fails.
        var newUnits = units
        for (name, build) in built {
            let running = units[name]?.adapters ?? []
            let adapters = build.adapters.map { made -> RunningAdapter in
                if let index = made.reused { return running[index] }
                return RunningAdapter(settings: made.settings, adapter: made.adapter, hosted: adapterHost.start([made.adapter]))
            }
            let kept = Set(build.adapters.compactMap(\.reused))
            // The set built and checked above: the same adapters, reused or new.
            let configuration = HubConfiguration(settings: build.settings, adapters: build.set)
            if var unit = units[name] {
                let oldSettings = unit.hub.configuration.settings
                let generation = unit.hub.apply(configuration)
                if let entry = build.entry { api.directory.set(entry) }
                let replaced = unit.adapters.indices.filter { !kept.contains($0) }.map { unit.adapters[$0] }
                if !replaced.isEmpty {
                    let logger = options.logger
                    adapterHost.perform {
                        // Notifications claimed before the reload finish on the old adapters first.
                        await generation.drained()
                        for old in replaced {
                            await old.hosted.stop()
                            logger.info("replaced adapter stopped", metadata: ["hub.name": "\(name)", "adapter.type": "\(old.settings.type)"])
                        }
                    }
                }
                unit.adapters = adapters
                if oldSettings.feedbackWebhook != build.settings.feedbackWebhook
                    || oldSettings.eventWebhooks != build.settings.eventWebhooks
                {
                    if let webhook = unit.webhook { webhookHost.perform { await webhook.stop() } }
                    unit.webhook = startWebhook(for: unit.hub)
                }
                newUnits[name] = unit
            } else if let entry = build.entry {
                var unit = Unit(hub: entry.hub, adapters: adapters, worker: workerHost.start([entry.hub]), webhook: nil)
                unit.webhook = startWebhook(for: entry.hub)
                newUnits[name] = unit
                api.directory.set(entry)
            }
        }
        for (name, unit) in units where target.hub(named: name) == nil {
            newUnits[name] = nil
            let entry = api.directory.remove(name)
            workerHost.perform {
                // Requests already answering finish first; then the webhook and the worker stop (handing its leases
                // back), then the adapters.
                while let entry, entry.requestsInFlight > 0 { try? await Task.sleep(for: .milliseconds(20)) }
                await unit.webhook?.stop()
                await unit.worker.stop()
                for adapter in unit.adapters { await adapter.hosted.stop() }
            }
        }
        state.withLock { $0 = (target, newUnits) }
        status.parts = target.fingerprints

        let report = Report(result: "applied", problems: [], changes: changes, duration: .now - started)
        status.record(
            .init(
                result: report.result, at: options.clock.now(), problems: 0, applied: changes.live,
                restartRequired: changes.restartRequired, seconds: Self.seconds(report.duration)),
            sha256: new.sha256, restartRequired: changes.restartRequired)
        options.logger.notice(
            "configuration reloaded",
            metadata: [
                "config.applied": .string(changes.live.joined(separator: ",")),
                "config.sha256": .string(new.sha256),
                "config.seconds": "\(Self.seconds(report.duration))",
            ])
        if !changes.restartRequired.isEmpty {
            options.logger.warning(
                "some changes take effect only after a restart; their running values stay",
                metadata: ["config.restartRequired": .string(changes.restartRequired.joined(separator: ","))])
        }
        return report
    }

    // MARK: Building

    /// An adapter for new settings: a running one kept (its index), or a new one.
    struct MadeAdapter: Sendable {
        var settings: AdapterSettings
        var adapter: any PlatformAdapter
        /// The index of the running adapter kept, or `nil` for a new adapter.
        var reused: Int?
    }

    /// Makes a hub's adapters: an adapter whose settings equal a running one's is that adapter.
    static func makeAdapters(
        _ settings: HubSettings, reusing running: [RunningAdapter], logger: Logger
    ) throws -> [MadeAdapter] {
        var available = Set(running.indices)
        var made: [MadeAdapter] = []
        for (index, adapterSettings) in settings.adapters.enumerated() {
            if let match = available.sorted().first(where: { running[$0].settings == adapterSettings }) {
                available.remove(match)
                made.append(MadeAdapter(settings: adapterSettings, adapter: running[match].adapter, reused: match))
                continue
            }
            var adapterLogger = logger
            adapterLogger[metadataKey: "hub.name"] = .string(settings.name)
            adapterLogger[metadataKey: "adapter.type"] = .string(adapterSettings.type)
            do {
                made.append(
                    MadeAdapter(
                        settings: adapterSettings,
                        adapter: try adapterSettings.makeAdapter(
                            context: AdapterContext(hubName: settings.name, logger: adapterLogger)),
                        reused: nil))
            } catch {
                throw ConfigurationError(problems: [
                    ConfigurationProblem(
                        file: "", line: 0, column: 0, keyPath: "hubs.\(settings.name).adapters[\(index)]", message: error.message)
                ])
            }
        }
        return made
    }

    private func startWebhook(for hub: Hub) -> ServiceHost.Hosted? {
        Self.startWebhook(for: hub, host: webhookHost, options: options)
    }

    /// Starts the hub's feedback webhook and event webhook sender, those configured; without event webhooks, clears
    /// the stored subscriptions so that the store writes no more events.
    private static func startWebhook(for hub: Hub, host: ServiceHost, options: Options) -> ServiceHost.Hosted? {
        var services: [any Service] = []
        if let settings = hub.configuration.feedbackWebhook {
            services.append(
                FeedbackWebhook(hub: hub, settings: settings, client: options.webhookClient, logger: options.logger))
        }
        if let outbox = hub.events {
            if let settings = hub.configuration.eventWebhooks {
                services.append(
                    EventWebhookSender(hub: hub, outbox: outbox, settings: settings, clock: options.clock, logger: options.logger))
            } else {
                let logger = options.logger
                host.perform {
                    do {
                        try await outbox.subscribe([])
                    } catch {
                        logger.warning("the hub's webhook subscriptions could not be cleared", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
        return services.isEmpty ? nil : host.start(services)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// An error as a message that holds no secret: the hub's own error messages never quote secrets.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HubError { return error.message }
        return "could not be started: \(type(of: error))"
    }
}
