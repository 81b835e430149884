import Foundation
import Yams

extension ConfigurationNode {
    /// Parses YAML text into a root node. Syntax errors are reported as problems.
    public static func parse(
        yaml: String, file: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        pendingFiles: [String: Data] = [:]
    ) -> ConfigurationNode {
        do {
            let root = try Yams.compose(yaml: yaml)
            return .root(
                root.map(ConfigurationTree.init) ?? .mapping(.init([])), file: file, environment: environment,
                pendingFiles: pendingFiles)
        } catch let error as YamlError {
            return .root(nil, file: file, environment: environment, problems: [problem(from: error, file: file)])
        } catch {
            // Never the error's description: it may quote the source text, which may hold a secret.
            return .root(
                nil, file: file, environment: environment,
                problems: [ConfigurationProblem(file: file, line: 0, column: 0, keyPath: "", message: "the file is not valid YAML")])
        }
    }

    /// Reads and parses a configuration file.
    public static func load(
        file: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        pendingFiles: [String: Data] = [:]
    ) -> ConfigurationNode {
        guard let data = FileManager.default.contents(atPath: file) else {
            return .root(
                nil, file: file, environment: environment,
                problems: [
                    ConfigurationProblem(
                        file: file, line: 0, column: 0, keyPath: "",
                        message: "cannot read the configuration file; check the path and its permissions")
                ])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            return .root(
                nil, file: file, environment: environment,
                problems: [
                    ConfigurationProblem(file: file, line: 0, column: 0, keyPath: "", message: "the file is not UTF-8 text")
                ])
        }
        return parse(yaml: text, file: file, environment: environment, pendingFiles: pendingFiles)
    }

    private static func problem(from error: YamlError, file: String) -> ConfigurationProblem {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let message = [context?.text, problem].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ": ")
            return ConfigurationProblem(
                file: file, line: mark.line, column: mark.column, keyPath: "", message: "invalid YAML: \(message)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ConfigurationProblem(
                file: file, line: context.mark.line, column: context.mark.column, keyPath: "",
                message: "duplicate keys: \(duplicates.joined(separator: ", "))")
        case .reader(let problem, let offset, _, let yaml):
            // Only the position and libyaml's fixed description: the offending line may hold a secret.
            var line = 1
            var column = 1
            if let offset {
                for byte in yaml.utf8.prefix(offset) {
                    if byte == UInt8(ascii: "\n") {
                        line += 1
                        column = 1
                    } else {
                        column += 1
                    }
                }
            }
            return ConfigurationProblem(file: file, line: line, column: column, keyPath: "", message: "invalid YAML: \(problem)")
        default:
            // Never the error's description: it quotes the source text, which may hold a secret.
            return ConfigurationProblem(file: file, line: 0, column: 0, keyPath: "", message: "the file is not valid YAML")
        }
    }
}

extension ConfigurationTree {
    /// The tree of a composed YAML node, positions kept.
    init(_ node: Yams.Node) {
        switch node {
        case .scalar(let scalar):
            self = .scalar(Scalar(scalar.string, style: scalar.style == .plain ? .plain : .quoted, mark: Mark(scalar.mark)))
        case .mapping(let mapping):
            self = .mapping(
                Mapping(mapping.map { Pair(key: ConfigurationTree($0.key), value: ConfigurationTree($0.value)) }, mark: Mark(mapping.mark)))
        case .sequence(let sequence):
            self = .sequence(Sequence(sequence.map { ConfigurationTree($0) }, mark: Mark(sequence.mark)))
        case .alias(let alias):
            self = .unsupported(Mark(alias.mark))
        }
    }
}

extension ConfigurationTree.Mark {
    init?(_ mark: Yams.Mark?) {
        guard let mark else { return nil }
        self.init(line: mark.line, column: mark.column)
    }
}
