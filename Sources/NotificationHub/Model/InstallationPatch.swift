import Foundation

/// One JSON Patch operation on an installation, as Azure Notification Hubs accepts them
/// (`application/json-patch+json`).
///
/// | path | add | replace | remove |
/// |---|---|---|---|
/// | `/pushChannel` | sets it (clears `expiredPushChannel`) | sets it | — |
/// | `/userId` | sets it | sets it | clears it |
/// | `/tags` | a string appends one tag, an array several | an array replaces all | removes all |
/// | `/tags/{tag}` | appends it | — | removes it |
/// | `/templates/{name}` | adds or replaces the template | replaces it | removes it |
/// | `/templates/{name}/body`, `/headers`, `/tags`, `/expiry` | sets the member (`/tags` appends) | sets it | clears it |
/// | `/pushVariables` | an object of strings replaces all | the same | removes all |
/// | `/pushVariables/{name}` | sets the variable | sets it | removes it |
///
/// Path segments are JSON Pointer tokens: `~1` stands for `/` and `~0` for `~`, so a template named `a/b` is
/// `/templates/a~1b`; a template name may hold spaces (`/templates/Template Name`).
public struct InstallationPatchOperation: Hashable, Sendable, Decodable {
    /// The operation kind.
    public enum Kind: String, Hashable, Sendable, Decodable {
        case add, remove, replace
    }

    /// `add`, `remove` or `replace`.
    public var op: Kind
    /// A JSON pointer into the installation.
    public var path: String
    /// The value for `add` and `replace`.
    public var value: JSONValue?

    /// Creates an operation.
    public init(op: Kind, path: String, value: JSONValue? = nil) {
        self.op = op
        self.path = path
        self.value = value
    }

    /// Parses a JSON Patch document (an array of operations), naming the offending operation on error.
    public static func parse(_ body: some Collection<UInt8>) throws(HubError) -> [InstallationPatchOperation] {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: Array(body))
        } catch {
            throw HubError(.invalidPatch, "the body is not valid JSON; send a JSON Patch array such as [{\"op\":\"add\",\"path\":\"/tags\",\"value\":\"news\"}]")
        }
        guard case .array(let elements) = json else {
            throw HubError(.invalidPatch, "a JSON Patch document must be an array of operations, not a \(json.typeName)")
        }
        return try elements.enumerated().map { (index, element) throws(HubError) in
            guard case .object(let object) = element else {
                throw HubError(.invalidPatch, "operation /\(index) must be an object with op, path and value")
            }
            guard let opText = object["op"]?.stringValue, let op = Kind(rawValue: opText) else {
                throw HubError(.invalidPatch, "operation /\(index)/op must be \"add\", \"remove\" or \"replace\"")
            }
            guard let path = object["path"]?.stringValue, path.hasPrefix("/") else {
                throw HubError(.invalidPatch, "operation /\(index)/path must be a JSON pointer such as /tags")
            }
            if op != .remove, object["value"] == nil {
                throw HubError(.invalidPatch, "operation /\(index)/value is required for \(op.rawValue)")
            }
            return InstallationPatchOperation(op: op, path: path, value: object["value"])
        }
    }
}

extension Installation {
    /// Applies JSON Patch operations in order. Errors name the operation's index and path.
    public mutating func apply(_ operations: [InstallationPatchOperation]) throws(HubError) {
        for (index, operation) in operations.enumerated() {
            do {
                try apply(operation)
            } catch {
                throw HubError(.invalidPatch, "operation /\(index) (\(operation.op.rawValue) \(operation.path)): \(error.message)")
            }
        }
    }

    private static func segments(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
    }

    private mutating func apply(_ operation: InstallationPatchOperation) throws(HubError) {
        let segments = Self.segments(operation.path)
        let value = operation.value
        switch (segments.first?.lowercased(), segments.count) {
        case ("pushchannel", 1):
            guard operation.op != .remove else { throw HubError(.invalidPatch, "pushChannel cannot be removed") }
            switch value {
            case .string(let handle)?: pushChannel = .handle(handle)
            case .object(let object)?: pushChannel = .object(object)
            default: throw HubError(.invalidPatch, "value must be a string or an object")
            }
            expiredPushChannel = false
        case ("userid", 1):
            if operation.op == .remove {
                userID = nil
            } else {
                guard let text = value?.stringValue else { throw HubError(.invalidPatch, "value must be a string") }
                userID = text
            }
        case ("tags", 1):
            switch operation.op {
            case .remove: tags = []
            case .add: tags.append(contentsOf: try Self.tagList(value).filter { !tags.contains($0) })
            case .replace: tags = try Self.tagList(value)
            }
        case ("tags", 2):
            switch operation.op {
            case .remove: tags.removeAll { $0 == segments[1] }
            case .add: if !tags.contains(segments[1]) { tags.append(segments[1]) }
            case .replace: throw HubError(.invalidPatch, "use remove and add for a single tag")
            }
        case ("templates", 2):
            let name = segments[1]
            if operation.op == .remove {
                templates.removeValue(forKey: name)
            } else {
                guard let value else { throw HubError(.invalidPatch, "value must be a template object") }
                do {
                    let data = Data(value.jsonString().utf8)
                    templates[name] = try JSONDecoder().decode(InstallationTemplate.self, from: data)
                } catch {
                    throw HubError(.invalidPatch, "value must be a template object with a string body")
                }
            }
        case ("pushvariables", 1):
            if operation.op == .remove {
                pushVariables = [:]
            } else {
                guard case .object(let object)? = value else {
                    throw HubError(.invalidPatch, "value must be an object of strings, such as {\"firstName\":\"Alice\"}")
                }
                var variables: [String: String] = [:]
                for (name, variable) in object {
                    guard let text = variable.stringValue else { throw HubError(.invalidPatch, "push variable '\(name)' must be a string") }
                    variables[name] = text
                }
                pushVariables = variables
            }
        case ("pushvariables", 2):
            let name = segments[1]
            if operation.op == .remove {
                pushVariables.removeValue(forKey: name)
            } else {
                guard let text = value?.stringValue else { throw HubError(.invalidPatch, "value must be a string") }
                pushVariables[name] = text
            }
        case ("templates", 3):
            let name = segments[1]
            guard var template = templates[name] else {
                throw HubError(.invalidPatch, "the installation has no template named '\(name)'")
            }
            switch (segments[2].lowercased(), operation.op) {
            case ("body", .remove): throw HubError(.invalidPatch, "a template's body cannot be removed")
            case ("body", _):
                guard let text = value?.stringValue else { throw HubError(.invalidPatch, "value must be a string") }
                template.body = text
            case ("headers", .remove): template.headers = [:]
            case ("headers", _):
                guard case .object(let object)? = value else { throw HubError(.invalidPatch, "value must be an object of strings") }
                var headers: [String: String] = operation.op == .add ? template.headers : [:]
                for (key, header) in object {
                    guard let text = header.stringValue else { throw HubError(.invalidPatch, "header '\(key)' must be a string") }
                    headers[key] = text
                }
                template.headers = headers
            case ("tags", .remove): template.tags = []
            case ("tags", .add): template.tags.append(contentsOf: try Self.tagList(value).filter { !template.tags.contains($0) })
            case ("tags", .replace): template.tags = try Self.tagList(value)
            case ("expiry", .remove): template.expiry = nil
            case ("expiry", _):
                guard let text = value?.stringValue else { throw HubError(.invalidPatch, "value must be a string") }
                template.expiry = text
            default:
                throw HubError(.invalidPatch, "templates have body, headers, tags and expiry")
            }
            templates[name] = template
        default:
            throw HubError(
                .invalidPatch,
                "the path is not patchable; use /pushChannel, /userId, /tags, /tags/{tag}, /templates/{name}, /templates/{name}/body|headers|tags|expiry, /pushVariables or /pushVariables/{name}")
        }
    }

    private static func tagList(_ value: JSONValue?) throws(HubError) -> [String] {
        switch value {
        case .string(let tag)?: return [tag]
        case .array(let elements)?:
            var tags: [String] = []
            for element in elements {
                guard let tag = element.stringValue else { throw HubError(.invalidPatch, "tags must be strings") }
                tags.append(tag)
            }
            return tags
        default:
            throw HubError(.invalidPatch, "value must be a tag or an array of tags")
        }
    }
}
