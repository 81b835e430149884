import Logging
import Testing
import HubTestSupport

@testable import NotificationHub

/// A reload that changes delivery settings keeps the hub-wide budgets while their own settings are unchanged, so
/// fan-outs on the old and the new configuration share them.
@Suite struct ReloadedDispatcherTests {
    @Test func limitsSurviveAReloadUnlessTheirSettingsChange() async throws {
        try await InstallationStoreTests.withStore { store in
            let adapters = try AdapterSet([RecordingAdapter()])
            let first = Dispatcher(store: store, adapters: adapters, configuration: DeliveryConfiguration(), logger: Logger.forTest("test"))
            var paged = DeliveryConfiguration()
            paged.pageSize = 500
            let kept = first.replacing(adapters: adapters, configuration: paged)
            #expect(kept.limits.deliveriesInFlight === first.limits.deliveriesInFlight)
            #expect(kept.configuration.pageSize == 500)
            var larger = paged
            larger.maximumDeliveriesInFlight = DeliveryConfiguration().maximumDeliveriesInFlight * 2
            let replaced = kept.replacing(adapters: adapters, configuration: larger)
            #expect(replaced.limits.deliveriesInFlight !== kept.limits.deliveriesInFlight)
            #expect(replaced.limits.settings.maximumDeliveriesInFlight == larger.maximumDeliveriesInFlight)
        }
    }
}
