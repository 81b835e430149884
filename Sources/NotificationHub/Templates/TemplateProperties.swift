/// The property bag of a template send. Property names are case-insensitive.
public struct TemplateProperties: Hashable, Sendable {
    private var values: [String: String]

    /// Creates a bag from name–value pairs; later duplicates (ignoring case) win.
    public init(_ values: [String: String] = [:]) {
        self.values = [:]
        for (name, value) in values { self.values[name.lowercased()] = value }
    }

    /// Creates a bag from a JSON object: strings are taken as they are, numbers and booleans as their JSON text.
    public init(json: JSONValue) throws(HubError) {
        guard case .object(let object) = json else {
            throw HubError(
                .invalidNotification,
                "a template notification's body must be a JSON object of property names to values; got a \(json.typeName)")
        }
        var values: [String: String] = [:]
        for (name, value) in object {
            switch value {
            case .string(let text): values[name] = text
            case .number, .bool: values[name] = value.jsonString()
            case .null: continue
            case .array, .object:
                throw HubError(
                    .invalidNotification,
                    "template property '\(name)' is a \(value.typeName); property values must be strings, numbers or booleans")
            }
        }
        self.init(values)
    }

    /// The value of a property, or `nil` when it is missing.
    public subscript(name: String) -> String? {
        values[name.lowercased()]
    }

    /// The bag with a device's push variables (``PushVariables``) for the properties it does not give: the send's
    /// own property wins over the device's variable of the same name (ignoring case). The bag itself when the
    /// device has none.
    public func filling(from variables: [String: String]) -> TemplateProperties {
        guard !variables.isEmpty else { return self }
        var merged = self
        for (name, value) in variables {
            let key = name.lowercased()
            if merged.values[key] == nil { merged.values[key] = value }
        }
        return merged
    }

    /// Every property, keyed by lower-cased name.
    public var all: [String: String] { values }
}
