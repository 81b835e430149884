import AdapterKit

extension APNsAdapterFactory {
    /// Reads a credential given per environment, as `keys: {production: …, sandbox: …}` or
    /// `certificates: {production: …, sandbox: …}`: an entry for every served environment and none for another.
    /// `served` is `nil` when the endpoints were unusable (every entry is still read and checked). Each problem is
    /// reported where it is; returns `nil` when there is any.
    ///
    /// - Parameters:
    ///   - name: the mapping's key (`keys`, `certificates`), as problems name it.
    ///   - item: what each entry is (`key`, `certificate`).
    ///   - shape: how the mapping is written, for the problem when it is not a mapping.
    ///   - missingEntry: what to add when a served environment has no entry, given the environment.
    ///   - read: reads one environment's entry, reporting its problems; `nil` when it has any.
    static func perEnvironment<Value>(
        _ name: String, in node: ConfigurationNode, item: String, shape: String, served: [APNsEnvironment?]?,
        missingEntry: (APNsEnvironment) -> String, read: (ConfigurationNode, APNsEnvironment) -> Value?
    ) -> [APNsEnvironment: Value]? {
        let mapping = node.child(name)
        guard mapping.isMapping else {
            mapping.report("\(name) maps each environment to its \(item): \(shape)")
            return nil
        }
        if let served, served.contains(where: { $0 == nil }) {
            // A URL endpoint's environment is unknown, so an entry per environment cannot be matched to it.
            mapping.report(
                "\(name) gives a \(item) per environment, but endpoint is a URL whose environment is unknown: write endpoint: production or sandbox, or endpoints: with both")
            return nil
        }
        let servedEnvironments = served?.compactMap { $0 } ?? APNsEnvironment.allCases
        var found: [APNsEnvironment: Value] = [:]
        var complete = true
        for environment in APNsEnvironment.allCases {
            let entry = mapping.child(environment.rawValue)
            let isServed = servedEnvironments.contains(environment)
            guard entry.isPresent else {
                if isServed {
                    entry.report("\(name) has no entry for \(environment); \(missingEntry(environment))")
                    complete = false
                }
                continue
            }
            guard isServed else {
                entry.report(
                    "this adapter does not serve \(environment); remove \(name).\(environment), or serve both environments with endpoints")
                complete = false
                continue
            }
            if let value = read(entry, environment) { found[environment] = value } else { complete = false }
        }
        mapping.rejectUnknownKeys()
        return complete ? found : nil
    }

    /// The values of `found` in the order of `served`; `nil` when the endpoints were unusable or one is missing.
    static func inServedOrder<Value>(_ found: [APNsEnvironment: Value], served: [APNsEnvironment?]?) -> [Value]? {
        guard let served else { return nil }
        var ordered: [Value] = []
        for environment in served {
            guard let environment, let value = found[environment] else { return nil }
            ordered.append(value)
        }
        return ordered
    }
}
