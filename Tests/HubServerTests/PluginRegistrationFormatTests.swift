import APNs
import FCM
import HubTestSupport
import NotificationHub
import Testing
import WNS
import WebPush

/// The built-in plugins declare Azure's registration descriptions; the core's tests stand in for them with
/// ``AzureRegistrationFormats``, which must say the same.
@Suite struct PluginRegistrationFormatTests {
    @Test func theTestFormatsAreThePluginsOwn() {
        let declared = [APNsAdapter.descriptor, FCMAdapter.descriptor, WNSAdapter.descriptor, WebPushAdapter.descriptor]
            .flatMap(\.registrationFormats)
        #expect(Set(declared) == Set(AzureRegistrationFormats.all))
        #expect(declared.count == AzureRegistrationFormats.all.count)
    }

    @Test func theRegistryKnowsEveryFactorysDescriptions() {
        let registry = AdapterRegistry([
            APNsAdapterFactory.self, FCMAdapterFactory.self, WNSAdapterFactory.self, WebPushAdapterFactory.self,
        ])
        #expect(Set(registry.registrationFormats) == Set(AzureRegistrationFormats.all))
    }

    @Test func everyPluginOffersASampleOfEachNativeFormat() {
        for descriptor in [APNsAdapter.descriptor, FCMAdapter.descriptor, WNSAdapter.descriptor, WebPushAdapter.descriptor] {
            #expect(Set(descriptor.samples.keys) == Set(descriptor.formats.keys))
        }
    }
}
