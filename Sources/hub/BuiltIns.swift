import APNs
import FCM
import NotificationHub
import PushEmulator
import WNS
import WebPush

/// The platform adapters and emulators compiled into the `hub` executable. A plugin joins by adding its factory here.
enum BuiltIns {
    /// Adapter factories, selected in `hub.yaml` by `type`.
    static let adapters: [any PlatformAdapterFactory.Type] = [
        APNsAdapterFactory.self, FCMAdapterFactory.self, WNSAdapterFactory.self, WebPushAdapterFactory.self,
    ]

    /// Emulator factories, selected by their key under `emulators:`.
    static let emulators: [any PlatformEmulatorFactory.Type] = [
        APNsEmulatorFactory.self, FCMEmulatorFactory.self, WNSEmulatorFactory.self, WebPushEmulatorFactory.self,
    ]

    /// The adapter registry of this executable.
    static var registry: AdapterRegistry { AdapterRegistry(adapters) }
}
