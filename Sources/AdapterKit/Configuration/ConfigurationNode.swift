import Foundation

/// A reader over one node of a YAML configuration file that records every problem, with its file, line, column and
/// key path, instead of stopping at the first.
///
/// Configuration types read their settings through it, and call ``rejectUnknownKeys()`` when done so that a
/// misspelt key is reported with a suggestion:
///
/// ```swift
/// let port = node.integer("port", default: 8080, in: 1...65535)
/// let host = node.string("host", default: "127.0.0.1")
/// node.rejectUnknownKeys()
/// ```
///
/// String values may hold `${NAME}` (or `${NAME:-fallback}`) references to environment variables. Secrets can also
/// be read from a file: `privateKey: {file: keys/AuthKey.p8}`, with paths relative to the configuration file.
public final class ConfigurationNode {
    /// Shared state of one file being read.
    final class Source {
        let file: String
        let directory: String
        let environment: [String: String]
        /// Files that will exist when the configuration is used but may not yet (the emulators' material), by
        /// resolved path; read instead of the disk.
        var pendingFiles: [String: Data]
        var problems: [ConfigurationProblem] = []
        var warnings: [ConfigurationProblem] = []
        /// Every file a reader asked for, by resolved path.
        var referencedFiles: Set<String> = []

        init(file: String, environment: [String: String], pendingFiles: [String: Data] = [:]) {
            self.file = file
            self.directory = (file as NSString).deletingLastPathComponent
            self.environment = environment
            self.pendingFiles = pendingFiles
        }
    }

    let node: Node?
    let source: Source
    /// The dotted key path of this node.
    public let keyPath: String
    /// Where the parent mapping is, used when this node is missing.
    let fallbackMark: Mark?
    private var readKeys: Set<String> = []

    init(node: Node?, source: Source, keyPath: String, fallbackMark: Mark?) {
        self.node = node
        self.source = source
        self.keyPath = keyPath
        self.fallbackMark = fallbackMark
    }

    // MARK: Problems

    /// Every problem recorded so far for this file.
    public var problems: [ConfigurationProblem] { source.problems }

    /// The file this node comes from.
    public var file: String { source.file }

    /// Resolves a path relative to the configuration file's folder.
    public func resolvePath(_ path: String) -> String {
        if path.hasPrefix("/") || source.directory.isEmpty { return path }
        return (source.directory as NSString).appendingPathComponent(path)
    }

    /// Every file read through ``readFile(_:)`` so far (keys, service accounts, certificates), by resolved path: what
    /// a running hub watches besides the configuration file itself.
    public var referencedFiles: Set<String> { source.referencedFiles }

    /// Adds files that will exist when the configuration is used (the emulators' material), by resolved path: read
    /// from memory while they are not on disk.
    public func addPendingFiles(_ files: [String: Data]) {
        source.pendingFiles.merge(files) { first, _ in first }
    }

    /// Reads a file a setting names (`path` relative to the configuration file), recording it as referenced. Files the
    /// emulators will write (``pendingFiles``) are read from memory when they are not on disk yet. Never writes.
    public func readFile(_ path: String) -> Data? {
        let resolved = resolvePath(path)
        source.referencedFiles.insert(resolved)
        return FileManager.default.contents(atPath: resolved) ?? source.pendingFiles[resolved]
    }

    /// Records a problem at this node (or where it would be).
    public func report(_ message: String) {
        let mark = node?.mark ?? fallbackMark
        source.problems.append(
            ConfigurationProblem(
                file: source.file, line: mark?.line ?? 0, column: mark?.column ?? 0, keyPath: keyPath,
                message: message))
    }

    /// Every warning recorded so far for this file: settings that work but deserve a look (deprecated keys, risky
    /// combinations), in file order.
    public var warnings: [ConfigurationProblem] {
        source.warnings.sorted { ($0.line, $0.column) < ($1.line, $1.column) }
    }

    /// Records a warning at this node (or where it would be). Warnings never fail validation.
    public func warn(_ message: String) {
        let mark = node?.mark ?? fallbackMark
        source.warnings.append(
            ConfigurationProblem(
                file: source.file, line: mark?.line ?? 0, column: mark?.column ?? 0, keyPath: keyPath,
                message: message))
    }

    /// Throws a ``ConfigurationError`` if any problem was recorded.
    public func throwIfProblems() throws(ConfigurationError) {
        if !source.problems.isEmpty {
            throw ConfigurationError(
                problems: source.problems.sorted { ($0.line, $0.column) < ($1.line, $1.column) })
        }
    }

    // MARK: Structure

    /// Whether the node exists in the file.
    public var isPresent: Bool {
        if case .scalar(let scalar)? = node, scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string) {
            return false
        }
        return node != nil
    }

    /// Whether the node is a mapping (as opposed to a scalar or a list).
    public var isMapping: Bool { node?.mapping != nil }

    /// The child node under `key` (present or not). Reading a key marks it as known.
    public func child(_ key: String) -> ConfigurationNode {
        readKeys.insert(key)
        let path = keyPath.isEmpty ? key : "\(keyPath).\(key)"
        guard let mapping = node?.mapping else {
            return ConfigurationNode(node: nil, source: source, keyPath: path, fallbackMark: node?.mark ?? fallbackMark)
        }
        let value = mapping.first { $0.key.string == key }?.value
        return ConfigurationNode(node: value, source: source, keyPath: path, fallbackMark: mapping.mark)
    }

    /// The entries of a mapping, in file order. Reports a problem if the node is present but not a mapping.
    public func entries() -> [(key: String, value: ConfigurationNode)] {
        guard isPresent else { return [] }
        guard let mapping = node?.mapping else {
            report("expected a mapping of keys to values")
            return []
        }
        return mapping.compactMap { pair in
            guard let key = pair.key.string else { return nil }
            readKeys.insert(key)
            let path = keyPath.isEmpty ? key : "\(keyPath).\(key)"
            return (key: key, value: ConfigurationNode(node: pair.value, source: source, keyPath: path, fallbackMark: pair.key.mark))
        }
    }

    /// The elements of a sequence. Reports a problem if the node is present but not a sequence.
    public func elements() -> [ConfigurationNode] {
        guard isPresent else { return [] }
        guard let sequence = node?.sequence else {
            report("expected a list")
            return []
        }
        return sequence.enumerated().map { index, element in
            ConfigurationNode(node: element, source: source, keyPath: "\(keyPath)[\(index)]", fallbackMark: sequence.mark)
        }
    }

    /// Reports every key of this mapping that no reader asked for, with the closest known key as a suggestion.
    public func rejectUnknownKeys() {
        guard let mapping = node?.mapping else { return }
        for pair in mapping {
            guard let key = pair.key.string, !readKeys.contains(key) else { continue }
            let path = keyPath.isEmpty ? key : "\(keyPath).\(key)"
            var message = "unknown key '\(key)'"
            if let suggestion = Self.closest(to: key, in: readKeys) {
                message += "; did you mean '\(suggestion)'?"
            } else if !readKeys.isEmpty {
                message += "; allowed keys: \(readKeys.sorted().joined(separator: ", "))"
            }
            let mark = pair.key.mark
            source.problems.append(
                ConfigurationProblem(
                    file: source.file, line: mark?.line ?? 0, column: mark?.column ?? 0, keyPath: path,
                    message: message))
        }
    }

    static func closest(to key: String, in candidates: Set<String>) -> String? {
        let lowered = key.lowercased()
        let scored = candidates.map { ($0, editDistance(lowered, $0.lowercased())) }
        guard let best = scored.min(by: { ($0.1, $0.0) < ($1.1, $1.0) }) else { return nil }
        return best.1 <= max(2, key.count / 3) ? best.0 : nil
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    // MARK: Scalars

    /// The scalar text with `${ENV}` references resolved, or `nil` when absent. Reports non-scalars.
    public var scalarText: String? {
        guard isPresent, let node else { return nil }
        guard let scalar = node.scalar else {
            report("expected a single value, not a \(node.mapping != nil ? "mapping" : "list")")
            return nil
        }
        return interpolate(scalar.string)
    }

    /// Whether `name` is a plausible environment variable name (so it is safe to print).
    static func isEnvironmentName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 64 else { return false }
        let allowed = { (scalar: Unicode.Scalar) in scalar.isASCII && (scalar.properties.isAlphabetic || scalar == "_") }
        return allowed(first) && name.unicodeScalars.allSatisfy { allowed($0) || ("0"..."9").contains($0) }
    }

    private func interpolate(_ text: String) -> String? {
        guard text.contains("${") else { return text }
        var result = ""
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                // Never the value itself: it may be a secret with a stray '${'.
                report("unterminated '${' in this value; write ${NAME} to use an environment variable")
                return nil
            }
            let reference = rest[start.upperBound..<end]
            let parts = reference.split(separator: ":-", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            if let value = source.environment[name], !value.isEmpty {
                result += value
            } else if parts.count == 2 {
                result += parts[1]
            } else {
                if Self.isEnvironmentName(name) {
                    report("environment variable \(name) is not set; set it or write ${\(name):-default}")
                } else {
                    report("a '${…}' reference in this value does not name an environment variable (letters, digits and '_'); for a secret from the environment write {env: NAME}")
                }
                return nil
            }
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }

    /// A string value, or `nil` (with a problem reported) when required and absent.
    public func string(_ key: String, required: Bool = false) -> String? {
        let child = child(key)
        guard child.isPresent else {
            if required { child.report("missing required key '\(key)'") }
            return nil
        }
        return child.scalarText
    }

    /// A string value with a default.
    public func string(_ key: String, default value: String) -> String {
        string(key) ?? value
    }

    /// A string value that must be one of `allowed` (case-insensitive); returns it as spelled in `allowed`.
    public func choice(_ key: String, _ allowed: [String], default value: String) -> String {
        let child = child(key)
        guard child.isPresent, let text = child.scalarText else { return value }
        if let match = allowed.first(where: { $0.caseInsensitiveEquals(text) }) { return match }
        child.report("'\(text)' is not allowed; use one of: \(allowed.joined(separator: ", "))")
        return value
    }

    /// An integer value within a range.
    public func integer(_ key: String, default value: Int, in range: ClosedRange<Int>) -> Int {
        let child = child(key)
        guard child.isPresent, let text = child.scalarText else { return value }
        guard let number = Int(text.replacingOccurrences(of: "_", with: "")), range.contains(number) else {
            child.report("expected an integer from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
            return value
        }
        return number
    }

    /// A number of seconds (fractions allowed) within a range.
    public func seconds(_ key: String, default value: Double, in range: ClosedRange<Double>) -> Double {
        let child = child(key)
        guard child.isPresent, let text = child.scalarText else { return value }
        guard let number = Double(text), range.contains(number) else {
            child.report("expected a number of seconds from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
            return value
        }
        return number
    }

    /// A boolean value.
    public func bool(_ key: String, default value: Bool) -> Bool {
        let child = child(key)
        guard child.isPresent, let text = child.scalarText else { return value }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            child.report("expected true or false, got '\(text)'")
            return value
        }
    }

    /// A list of strings (a single string is taken as a list of one).
    public func strings(_ key: String) -> [String] {
        let child = child(key)
        guard child.isPresent else { return [] }
        if child.node?.scalar != nil { return child.scalarText.map { [$0] } ?? [] }
        return child.elements().compactMap(\.scalarText)
    }

    /// A secret: a plain value (usually `${ENV}`), or `{file: path}` to read it from a file, or `{env: NAME}`.
    /// The value itself never appears in problems.
    public func secret(_ key: String, required: Bool = true) -> String? {
        child(key).secretValue(required: required, name: key)
    }

    /// This node read as a secret (see ``secret(_:required:)``), e.g. an element of a list of keys.
    public func secretValue(required: Bool = true, name: String? = nil) -> String? {
        let label = name ?? keyPath
        guard isPresent else {
            if required { report("missing required secret '\(label)'; give a value, ${ENV_VAR} or {file: path}") }
            return nil
        }
        if node?.mapping != nil {
            let file = string("file")
            let env = string("env")
            rejectUnknownKeys()
            if let file {
                let path = resolvePath(file)
                guard let data = readFile(file), let text = String(data: data, encoding: .utf8)
                else {
                    report("cannot read secret file '\(path)'")
                    return nil
                }
                return text
            }
            if let env {
                guard let value = source.environment[env], !value.isEmpty else {
                    report("environment variable \(env) is not set")
                    return nil
                }
                return value
            }
            report("a secret mapping needs 'file' or 'env'")
            return nil
        }
        guard let text = scalarText else { return nil }
        if text.isEmpty, required {
            report("the secret '\(label)' is empty")
            return nil
        }
        return text
    }
}
