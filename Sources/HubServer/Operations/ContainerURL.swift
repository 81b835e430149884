import Foundation
import NotificationHub

/// A URL of one of a hub's blob containers or of a blob in one: `<origin>/blobs/<hub>.<container>[/<blob>]?<token>`.
///
/// The shape is Azure Storage's path-style URL (`http://127.0.0.1:10000/<account>/<container>/<blob>`), the one its
/// clients read when the host is an IP address: `blobs` stands for the account, `<hub>.<container>` for the container
/// (container names hold no dot, so the last dot splits it).
///
/// Jobs accept only these as `OutputContainerUri` and `ImportFileUri`: the hub reads and writes its own files and
/// never fetches a URL it is given, so a job cannot be pointed at another host (no server-side request forgery).
struct ContainerURL: Sendable, Hashable {
    /// The path segment container URLs start with.
    static let prefix = "blobs"

    var container: String
    var blob: String?
    var query: String

    /// The path segment of a hub's container: `<hub>.<container>`.
    static func segment(hub: String, container: String) -> String { "\(hub).\(container)" }

    /// Splits a path segment `<hub>.<container>`; `nil` without a dot.
    static func split(_ segment: String) -> (hub: String, container: String)? {
        guard let dot = segment.lastIndex(of: "."), dot != segment.startIndex else { return nil }
        return (String(segment[..<dot]), String(segment[segment.index(after: dot)...]))
    }

    /// Why a URL is refused, to say in a 400.
    struct Invalid: Error, Sendable {
        var message: String
    }

    /// Parses a URL given to a job and checks that it names a container of `hub` on this server (`origin`, the
    /// scheme and authority the request came to) with a valid token allowing `needed`.
    static func parse(
        _ text: String, field: String, hub: Hub, origin: String, needed: ContainerSignature.Permissions,
        wantsBlob: Bool, now: Date
    ) throws(Invalid) -> ContainerURL {
        let expected = wantsBlob ? "\(origin)/\(prefix)/\(hub.name).<container>/<blob>?<token>" : "\(origin)/\(prefix)/\(hub.name).<container>?<token>"
        let refuse = Invalid(
            message: "\(field) must be a container URL this hub issued (GET /\(hub.name)/containers/{name}), of the form \(expected); the hub reads and writes only its own containers")
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host
        else { throw refuse }
        let authority = components.port.map { "\(host):\($0)" } ?? host
        let originAuthority = origin.range(of: "://").map { String(origin[$0.upperBound...]) } ?? origin
        guard authority.lowercased() == originAuthority.lowercased() else { throw refuse }
        let segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            .map { $0.removingPercentEncoding ?? String($0) }
        guard segments.count == (wantsBlob ? 3 : 2) || (!wantsBlob && segments.count == 3 && segments[2].isEmpty),
            segments[0] == prefix, case let (hubName, container)? = split(segments[1]), hubName == hub.name,
            HubFileArea.isValidContainer(container)
        else { throw refuse }
        if wantsBlob && !HubFileArea.isValidBlob(segments[2]) {
            throw Invalid(message: "\(field) names a blob '\(segments[2].prefix(64))' that is not a valid blob name")
        }
        let query = components.percentEncodedQuery ?? ""
        do {
            _ = try ContainerSignature.verify(
                query: query, hub: hub.name, container: container, needed: needed, keys: hub.configuration.keys,
                now: now)
        } catch {
            throw Invalid(message: "\(field): \(error.message)")
        }
        return ContainerURL(container: container, blob: wantsBlob ? segments[2] : nil, query: query)
    }
}
