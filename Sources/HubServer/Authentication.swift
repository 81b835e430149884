import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// Authenticates every request to a hub's routes, in one place, before any handler runs and before any body is
/// read: it resolves the hub the path names and proves the caller with a SharedAccessSignature token or, where the
/// hub verifies device tokens, a bearer JWT, against one snapshot of the hub's configuration that the whole request
/// then uses (``HubContext``). Route groups then check rights with ``CallerRequirement``.
///
/// An unknown hub is answered exactly as a token that is not valid for the request, so hub names and key names
/// cannot be enumerated; a hub removed by a reload is answered 404 to a token signed with one of its keys.
///
/// The request keeps the hub it found for its whole life, and counts as in flight on it, so that a hub removed
/// meanwhile stops only once its requests are answered.
struct HubAuthenticationMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext

    let directory: HubDirectory
    let clock: any WallClock

    func handle(
        _ request: Request, context: HubRequestContext,
        next: (Request, HubRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let name = try APIPath.decode(context.parameters.require("hub"))
        guard let header = request.headers[.authorization], !header.isEmpty else {
            throw APIError.unauthorized("send an Authorization header: a SharedAccessSignature token (see `hub token`)")
        }
        let entry = directory.entry(name)
        let hub = entry?.hub
        let configuration = hub?.configuration
        let caller: Caller
        if header.count > 7, header.prefix(7).lowercased() == "bearer " {
            guard let hub, let verifier = entry?.verifier else {
                throw Self.invalidBearer("bearer tokens are not accepted here; send a SharedAccessSignature token")
            }
            do {
                let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
                caller = .user(try await verifier.user(from: token, now: clock.now()))
            } catch {
                throw Self.invalidBearer(error.message)
            }
        } else {
            let token = try SharedAccessSignature(header: header)
            guard let hub else {
                // Expiry is reported the same way for every hub; everything else is the one invalid answer.
                guard token.expiry > Int(clock.now().timeIntervalSince1970) else {
                    throw APIError.unauthorized("the token expired; create a new one")
                }
                if let keys = directory.removedKeys(name),
                    (try? token.verify(
                        keys: keys, hubName: name, requestPath: request.uri.path,
                        requestAuthority: request.head.authority ?? request.headers[HTTPField.Name("Host")!], now: clock.now()))
                        != nil
                {
                    throw APIError(
                        .notFound, code: "HubNotFound", message: "the hub '\(name)' was removed from the configuration")
                }
                throw SharedAccessSignature.invalid
            }
            let rights = try token.verify(
                keys: configuration?.keys ?? [], hubName: hub.name, requestPath: request.uri.path,
                requestAuthority: request.head.authority ?? request.headers[HTTPField.Name("Host")!], now: clock.now())
            caller = .key(name: token.keyName, rights: rights)
        }
        guard let entry, let hub, let configuration else { throw SharedAccessSignature.invalid }
        context.authentication = HubAuthentication(hub: hub, configuration: configuration, caller: caller)
        entry.enter()
        defer { entry.leave() }
        return try await next(request, context)
    }

    /// 401 for a bearer token that is refused, with the `WWW-Authenticate` challenge of RFC 6750.
    static func invalidBearer(_ message: String) -> APIError {
        var error = APIError(.unauthorized, code: "InvalidToken", message: message)
        error.headers[.wwwAuthenticate] = #"Bearer error="invalid_token""#
        return error
    }
}

/// Path segments as the hub reads them.
enum APIPath {
    /// A path parameter, percent-decoded; a malformed escape is a 400, never a second reading of the same id.
    static func decode(_ raw: String) throws(APIError) -> String {
        guard let value = raw.percentDecoded else {
            throw APIError.badRequest("InvalidPath", "the path holds a malformed percent-escape; encode '%' as %25")
        }
        return value
    }
}

extension StringProtocol {
    /// Foundation's `removingPercentEncoding`, without its cost (a bridged copy of the string) for text that holds
    /// no escape, such as most ids, paths and token fields: that text is its own decoding.
    var percentDecoded: String? {
        utf8.contains(UInt8(ascii: "%")) ? removingPercentEncoding : String(self)
    }
}
