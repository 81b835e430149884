import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// What a node knows of the hub's nodes.
struct Membership: Sendable {
    /// Deliveries this node committed since it started.
    var delivered = 0
    /// The live nodes' names at the last heartbeat.
    var nodes: [String] = []
    /// Heartbeats that failed in a row.
    var failedHeartbeats = 0
}

extension DeliveryWorker {
    /// The hub's live nodes (this one included once it has joined), with the partitions each holds.
    public func nodes() async throws -> [HubNode] {
        try await notificationStore.nodes(now: clock.now())
    }

    /// Records this node's heartbeat, and logs and measures changes in the hub's nodes.
    func beat() async {
        let now = clock.now()
        let delivered = membership.withLock { $0.delivered }
        let node = HubNode(id: owner, name: nodeName, startedTime: core.startedTime, heartbeatTime: now, delivered: delivered)
        do {
            // A heartbeat that a lost connection holds up counts as failed, and the next one is on time.
            let store = notificationStore
            let live = try await withTimeLimit(
                .seconds(HubNode.livenessSeconds),
                timeout: HubError(.storageFailure, "the heartbeat was not recorded within \(Int(HubNode.livenessSeconds)) s")
            ) { try await store.heartbeat(node, now: now) }
            let names = live.map(\.name)
            let (before, failed) = membership.withLock { state in
                defer {
                    state.nodes = names
                    state.failedHeartbeats = 0
                }
                return (state.nodes, state.failedHeartbeats)
            }
            if failed > 0 { logger.notice("this node's heartbeat is recorded again; it counts among the hub's nodes") }
            if names != before {
                logger.notice(
                    "the hub's nodes changed",
                    metadata: ["hub.nodes": .string(names.joined(separator: ",")), "hub.nodeCount": "\(names.count)"])
                Gauge(label: "hub_nodes_live", dimensions: [("hub", core.name), ("node", nodeName)]).record(names.count)
            }
        } catch {
            let failed = membership.withLock { state in
                state.failedHeartbeats += 1
                return state.failedHeartbeats
            }
            if failed == 1 {
                logger.warning(
                    "could not record this node's heartbeat; the other nodes stop counting it after \(Int(HubNode.livenessSeconds)) s",
                    metadata: ["error": "\(error)"])
            }
        }
    }

    /// Beats every ``HubNode/heartbeatSeconds`` until graceful shutdown.
    ///
    /// The beats fall on multiples of the period on the process's clock (``nextBeat(after:)``), waited for on the
    /// shared deadline scheduler: the workers of every hub of the process beat at the same instants, so a node serving
    /// many idle hubs wakes once per period for all of them instead of once per hub.
    func heartbeatLoop() async {
        let pause = WorkSignal()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown {
                    let scheduler = DeadlineScheduler.shared
                    await pause.wait(until: Self.nextBeat(after: scheduler.instant()), scheduler: scheduler)
                    try Task.checkCancellation()
                }
            } catch {
                return
            }
            await beat()
        }
    }

    /// The process's reference instant for heartbeats.
    private static let beatEpoch = ContinuousClock.now

    /// The first multiple of ``HubNode/heartbeatSeconds`` after `instant`, counted from the process's reference
    /// instant.
    static func nextBeat(after instant: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let period = Duration.seconds(HubNode.heartbeatSeconds)
        let periods = Int(((instant - beatEpoch) / period).rounded(.down))
        return beatEpoch + period * (periods + 1)
    }

    /// Wakes the worker whenever another node announces work; listens again after a lost connection (each new
    /// listen also wakes the worker, for what was announced meanwhile), until graceful shutdown.
    func listenLoop() async {
        let owner = self.owner
        let work = self.work
        var failures = 0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown {
                    try await self.notificationStore.listenForWork { sender in
                        if sender != owner { work.signal() }
                    }
                }
                // Returned without an error: the store has nothing to listen to (the idle worker then looks for
                // work every second), or the task is ending.
                if !Task.isCancelled && !Task.isShuttingDownGracefully {
                    unannounced.store(true, ordering: .relaxed)
                    // A wait that began before this was known is cut short, so that it lasts a second, not the
                    // longest wait of a worker that hears of new work.
                    work.signal()
                }
                return
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                failures += 1
                if failures == 1 {
                    logger.warning(
                        "stopped listening for work announced by other nodes; listening again when the database answers",
                        metadata: ["error": "\(error)"])
                }
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            } catch {
                return
            }
        }
    }
}
