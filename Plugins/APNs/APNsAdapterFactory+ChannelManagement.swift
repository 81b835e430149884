import AdapterKit
import Foundation

extension APNsAdapterFactory {
    /// Where each served environment's broadcast channels are managed, keyed by the environment (`nil` for an
    /// endpoint given as a URL alone):
    ///
    /// ```yaml
    ///     endpoint: production
    ///     manageEndpoint: production        # default for a named environment: api-manage-broadcast.push.apple.com:2196
    ///     # or, with endpoints: {production: …, sandbox: …}
    ///     manageEndpoints: {production: https://127.0.0.1:2196, sandbox: https://127.0.0.1:2195}
    /// ```
    ///
    /// An environment served at Apple's own host defaults to Apple's management host; an endpoint given as a URL
    /// (the emulator, a proxy) has none unless `manageEndpoint(s)` names one; `none` turns channel management off.
    /// `served` lists each served environment (when known) with its push host.
    static func managementEndpoints(
        from node: ConfigurationNode, served endpoints: [(environment: APNsEnvironment?, host: String)]?
    ) -> [APNsEnvironment?: (host: String, port: Int)] {
        let served = endpoints?.map(\.environment)
        let atApple = Set(endpoints?.compactMap { $0.environment?.appleHost == $0.host ? $0.environment : nil } ?? [])
        let single = node.child("manageEndpoint")
        let both = node.child("manageEndpoints")
        var found: [APNsEnvironment?: (host: String, port: Int)] = [:]
        guard let served else { return found }
        let servesBoth = served.count > 1
        if single.isPresent && servesBoth {
            single.report("manageEndpoint applies to an adapter with one endpoint; with endpoints write manageEndpoints: {production: …, sandbox: …}")
            return found
        }
        if both.isPresent && !servesBoth {
            both.report("manageEndpoints applies to an adapter with endpoints (both environments); with endpoint write manageEndpoint")
            return found
        }
        if both.isPresent && !both.isMapping {
            both.report("manageEndpoints maps each environment to its channel management endpoint: {production: production, sandbox: https://host:port}")
            return found
        }
        for environment in served {
            let entry = servesBoth ? both.child(environment?.rawValue ?? "") : single
            let name = servesBoth ? "manageEndpoints.\(environment?.rawValue ?? "")" : "manageEndpoint"
            guard entry.isPresent, let text = entry.scalarText else {
                if let environment, atApple.contains(environment) {
                    found[environment] = (environment.appleManagementHost, environment.appleManagementPort)
                }
                continue
            }
            if text.lowercased() == "none" { continue }
            if let named = APNsSettings.namedEnvironment(text) {
                guard environment == nil || named == environment else {
                    entry.report("\(name) names the \(named) environment for an endpoint of \(environment.map(\.rawValue) ?? "unknown environment"); write \(environment.map(\.rawValue) ?? "a URL"), a URL or none")
                    continue
                }
                found[environment] = (named.appleManagementHost, named.appleManagementPort)
                continue
            }
            guard let url = URL(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty else {
                entry.report("\(name) must be production, sandbox, an https://host[:port] URL or none")
                continue
            }
            found[environment] = (host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), url.port ?? 443)
        }
        if both.isPresent { both.rejectUnknownKeys() }
        return found
    }
}
