import Synchronization

/// Which APNs environment each device token was last accepted in, for an adapter that serves both: later sends go
/// straight to it instead of trying the other environment first.
///
/// Bounded and in process only: it holds at most `capacity` devices (2 when `capacity` is 1) in two generations (a lookup moves a device
/// into the current one; when the current one is full it becomes the previous one and the old previous one is
/// dropped), so the devices sent to most recently stay. Tokens are kept as 64-bit hashes, seeded per process: two
/// tokens sharing a hash cost one extra request (the first environment tried refuses the token and the other one is
/// tried), never a wrong outcome. After a restart the first send to each device learns its environment again.
final class APNsEnvironmentMemory: Sendable {
    private struct State {
        var current: [UInt64: APNsEnvironment] = [:]
        var previous: [UInt64: APNsEnvironment] = [:]
    }

    /// Devices remembered at most.
    let capacity: Int
    private let state = Mutex(State())

    /// Creates an empty memory of at most `capacity` devices (0 remembers none).
    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The key a device token is remembered under (case-insensitive, as hex is).
    static func key(for token: String) -> UInt64 {
        var hasher = Hasher()
        for byte in token.utf8 { hasher.combine((65...90).contains(byte) ? byte | 0x20 : byte) }
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// How many devices are remembered now.
    var count: Int { state.withLock { $0.current.count + $0.previous.count } }

    /// The remembered environment of each key, `nil` where none is.
    func environments(for keys: [UInt64]) -> [APNsEnvironment?] {
        guard capacity > 0 else { return keys.map { _ in nil } }
        return state.withLock { state in
            keys.map { key in
                if let environment = state.current[key] { return environment }
                guard let environment = state.previous.removeValue(forKey: key) else { return nil }
                insert(key, environment, into: &state)
                return environment
            }
        }
    }

    /// Remembers where devices were accepted.
    func remember(_ learned: [(key: UInt64, environment: APNsEnvironment)]) {
        guard capacity > 0, !learned.isEmpty else { return }
        state.withLock { state in
            for (key, environment) in learned {
                state.previous.removeValue(forKey: key)
                insert(key, environment, into: &state)
            }
        }
    }

    /// Forgets devices neither environment accepted.
    func forget(_ keys: [UInt64]) {
        guard capacity > 0, !keys.isEmpty else { return }
        state.withLock { state in
            for key in keys {
                state.current.removeValue(forKey: key)
                state.previous.removeValue(forKey: key)
            }
        }
    }

    /// Forgets every device.
    func clear() {
        state.withLock { $0 = State() }
    }

    private func insert(_ key: UInt64, _ environment: APNsEnvironment, into state: inout State) {
        let generation = max(1, capacity / 2)
        if state.current[key] == nil, state.current.count >= generation {
            state.previous = state.current
            state.current = [:]
            state.current.reserveCapacity(min(generation, 1 << 16))
        }
        state.current[key] = environment
    }
}
