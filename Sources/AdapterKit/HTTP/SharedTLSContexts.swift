import NIOSSL
import Synchronization

/// TLS client contexts shared by every connection pool of the process with the same configuration.
///
/// A context built with the platform's trust roots loads the system's whole CA bundle (some 150 certificates): on a
/// node serving many hubs, whose adapters mostly share one configuration, a context each would cost start-up time
/// and memory per hub for the same thing. Contexts are kept while a pool uses them (weakly: one whose pools were
/// all closed by a reload goes).
public enum SharedTLSContexts {
    private struct Key: Hashable {
        var configuration: TLSConfiguration

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.configuration.bestEffortEquals(rhs.configuration) }
        func hash(into hasher: inout Hasher) { configuration.bestEffortHash(into: &hasher) }
    }

    private struct Entry {
        weak var context: NIOSSLContext?
    }

    private static let contexts = Mutex<[Key: Entry]>([:])

    /// The context of `configuration`: one already in use with an equal configuration, or a new one.
    public static func context(for configuration: TLSConfiguration) throws -> NIOSSLContext {
        let key = Key(configuration: configuration)
        if let context = contexts.withLock({ $0[key]?.context }) { return context }
        // Built outside the lock: loading the trust roots takes milliseconds. Two callers at once may both build
        // one; the second is kept, and either works.
        let context = try NIOSSLContext(configuration: configuration)
        contexts.withLock { contexts in
            contexts = contexts.filter { $0.value.context != nil }
            contexts[key] = Entry(context: context)
        }
        return context
    }
}
