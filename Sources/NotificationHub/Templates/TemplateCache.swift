import Synchronization

/// Compiled templates keyed by body text, so a fan-out compiles each distinct body once.
public final class TemplateCache: Sendable {
    private let entries = Mutex<[String: Result<Template, HubError>]>([:])
    private let capacity: Int

    /// Creates a cache holding up to `capacity` bodies (cleared when full).
    public init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// The compiled template for a body.
    public func template(for body: String, kind: Template.Kind? = nil) throws(HubError) -> Template {
        let key = kind == .text ? "\u{0}" + body : body
        if let cached = entries.withLock({ $0[key] }) { return try cached.get() }
        let result: Result<Template, HubError>
        do {
            result = .success(try Template(parsing: body, kind: kind))
        } catch {
            result = .failure(error)
        }
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = result
        }
        return try result.get()
    }
}
