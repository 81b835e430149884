import Metrics

extension Hub {
    /// Counts committed deliveries: the `hub_notifications_delivered_total` metric by platform and outcome, and the
    /// hub's per-second ``deliveryRates``.
    func countDelivered(_ summary: DispatchSummary) {
        deliveryRates.record(summary, at: clock.now())
        for (platform, outcomes) in summary.counts {
            for (outcome, count) in outcomes where count > 0 {
                Counter(
                    label: "hub_notifications_delivered_total",
                    dimensions: [("platform", platform.name), ("outcome", outcome.name)]
                ).increment(by: count)
            }
        }
    }
}
