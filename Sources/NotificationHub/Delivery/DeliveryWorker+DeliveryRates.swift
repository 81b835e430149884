import Metrics
import Synchronization

extension DeliveryWorker {
    /// Counts committed deliveries (and a test send's, which nothing commits): the `hub_notifications_delivered_total` metric by platform, outcome and node,
    /// the hub's per-second ``deliveryRates`` and the node's total in its heartbeat.
    func countDelivered(_ summary: DispatchSummary) {
        deliveryRates.record(summary, at: clock.now())
        membership.withLock { $0.delivered += summary.total }
        for (platform, outcomes) in summary.counts {
            for (outcome, count) in outcomes where count > 0 {
                Counter(
                    label: "hub_notifications_delivered_total",
                    dimensions: [("platform", platform.name), ("outcome", outcome.name), ("node", nodeName)]
                ).increment(by: count)
            }
        }
    }
}
