import APNs
import NotificationHub
import PushEmulator

/// The platform adapters and emulators compiled into the `hub` executable. A plugin joins by adding its factory here.
enum BuiltIns {
    /// Adapter factories, selected in `hub.yaml` by `type`.
    static let adapters: [any PlatformAdapterFactory.Type] = [APNsAdapterFactory.self]

    /// Emulator factories, selected by their key under `emulators:`.
    static let emulators: [any PlatformEmulatorFactory.Type] = [APNsEmulatorFactory.self]

    /// The adapter registry of this executable.
    static var registry: AdapterRegistry { AdapterRegistry(adapters) }
}
