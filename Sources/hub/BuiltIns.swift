import ADM
import APNs
import Baidu
import FCM
import HMS
import NotificationHub
import PushEmulator
import WNS
import WebPush
import Xiaomi

/// One platform plugin compiled into the `hub` executable: its adapter factory and its platform's emulator.
struct BuiltInPlugin {
    /// Selected in `hub.yaml` by the factory's `type`.
    var adapter: any PlatformAdapterFactory.Type
    /// Selected by its key under `emulators:`.
    var emulator: any PlatformEmulatorFactory.Type

    init(_ adapter: any PlatformAdapterFactory.Type, emulator: any PlatformEmulatorFactory.Type) {
        self.adapter = adapter
        self.emulator = emulator
    }
}

/// The platform plugins compiled into the `hub` executable. A plugin joins with one line in ``plugins``.
enum BuiltIns {
    /// Every plugin, one line each.
    static let plugins: [BuiltInPlugin] = [
        BuiltInPlugin(APNsAdapterFactory.self, emulator: APNsEmulatorFactory.self),
        BuiltInPlugin(FCMAdapterFactory.self, emulator: FCMEmulatorFactory.self),
        BuiltInPlugin(WNSAdapterFactory.self, emulator: WNSEmulatorFactory.self),
        BuiltInPlugin(WebPushAdapterFactory.self, emulator: WebPushEmulatorFactory.self),
        BuiltInPlugin(HMSAdapterFactory.self, emulator: HMSEmulatorFactory.self),
        BuiltInPlugin(ADMAdapterFactory.self, emulator: ADMEmulatorFactory.self),
        BuiltInPlugin(XiaomiAdapterFactory.self, emulator: XiaomiEmulatorFactory.self),
        BuiltInPlugin(BaiduAdapterFactory.self, emulator: BaiduEmulatorFactory.self),
    ]

    /// Adapter factories, selected in `hub.yaml` by `type`.
    static var adapters: [any PlatformAdapterFactory.Type] { plugins.map(\.adapter) }

    /// Emulator factories, selected by their key under `emulators:`.
    static var emulators: [any PlatformEmulatorFactory.Type] { plugins.map(\.emulator) }

    /// The adapter registry of this executable.
    static var registry: AdapterRegistry { AdapterRegistry(adapters) }
}
