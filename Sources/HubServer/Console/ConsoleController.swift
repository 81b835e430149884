import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The admin console at `/console`: a page, a stylesheet and a script, served with a strict Content-Security-Policy.
///
/// The console has no server-side powers: the page signs in with a hub's key (minting its SharedAccessSignature
/// tokens in the browser) and makes ordinary REST calls to the hub's API, which checks them like any other client's.
/// Turned on by `server.console` in `hub.yaml`.
public struct ConsoleController<Context: RequestContext>: Sendable {
    /// The policy every console response carries: scripts, styles and requests only from the hub itself, no inline
    /// code, no frames, no form posts, and Trusted Types so that no string can become HTML.
    public static var contentSecurityPolicy: String {
        [
            "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
            "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'", "require-trusted-types-for 'script'",
            "trusted-types 'none'",
        ].joined(separator: "; ")
    }

    /// Creates the controller.
    public init() {}

    /// Adds `GET /console` and the console's assets to a router.
    public func addRoutes(to router: some RouterMethods<Context>) {
        for (path, asset) in ConsoleAssets.byPath {
            router.get(RouterPath(path)) { request, _ in Self.response(asset, request: request) }
        }
    }

    static func response(_ asset: ConsoleAssets.Asset, request: Request) -> Response {
        var headers: HTTPFields = [
            .contentType: asset.contentType,
            .cacheControl: "no-cache",
            .eTag: asset.entityTag,
            HTTPField.Name("Content-Security-Policy")!: contentSecurityPolicy,
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
            HTTPField.Name("Cross-Origin-Resource-Policy")!: "same-origin",
        ]
        if let tags = request.headers[.ifNoneMatch], tags.split(separator: ",").contains(where: {
            $0.trimmingCharacters(in: .whitespaces) == asset.entityTag
        }) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentLength] = String(asset.text.utf8.count)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: asset.text)))
    }
}
