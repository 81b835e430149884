import Foundation
import Hummingbird
import NotificationHub

/// `GET /{hub}/configuration` (Manage): the running configuration as `hub validate --running` compares a file with
/// it — the file's hash, when it was loaded, the last reload, and a digest of every part (``HubsConfiguration/
/// fingerprints``) of the server and of this hub (other hubs' digests are not shown). Digests only: no key, credential
/// or setting value is sent.
struct ConfigurationController {
    let api: HubAPI

    /// The answer.
    struct RunningConfiguration: Codable {
        var sha256: String
        var loadedAt: Date
        var lastReload: ConfigurationStatus.Reload?
        var restartRequired: [String]
        var parts: [String: String]
    }

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.group().add(middleware: CallerRequirement.manage).get("configuration") { _, context in
            let status = api.status.snapshot
            var response = try api.json(
                RunningConfiguration(
                    sha256: status.sha256, loadedAt: status.loadedAt, lastReload: status.lastReload,
                    restartRequired: status.restartRequired,
                    parts: ConfigurationChanges.parts(api.status.parts, visibleTo: context.hub.name)))
            response.headers[.cacheControl] = "no-store"
            return response
        }
        return routes
    }
}
