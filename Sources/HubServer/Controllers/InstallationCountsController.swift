import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// `GET /{hub}/installationcounts` (Manage): installations and registrations in total and per platform, from the
/// store's counters (no scan), and for each `tags` parameter (a tag expression, up to
/// ``maximumExpressions``) the audience a send to it reaches now, from the tag index.
struct InstallationCountsController {
    let api: HubAPI

    /// Tag expressions counted in one request at most.
    static let maximumExpressions = 10

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.group().add(middleware: CallerRequirement.manage).get("installationcounts") { try await counts($0, $1) }
        return routes
    }

    struct CountsBody: Encodable {
        struct PlatformCount: Encodable {
            var platform: String
            var installations: Int
            var expired: Int
            var registrations: Int
        }

        struct ExpressionCount: Encodable {
            var expression: String
            /// Installations and registrations a send to the expression reaches (channels not expired).
            var audience: Int
        }

        var installations: Int
        var expired: Int
        var registrations: Int
        var platforms: [PlatformCount]
        var tags: [ExpressionCount]
    }

    func counts(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let texts = request.uri.queryParameters.getAll("tags").map { String($0) }.filter { !$0.isEmpty }
        guard texts.count <= Self.maximumExpressions else {
            throw APIError.badRequest(
                "TooManyExpressions", "ask for at most \(Self.maximumExpressions) tag expressions at once, not \(texts.count)")
        }
        var expressions: [(String, TagExpression)] = []
        for text in texts {
            do {
                expressions.append((text, try context.parseExpression(text)))
            } catch {
                throw APIError(error)
            }
        }
        guard let counter = hub.counter else {
            throw APIError(.notFound, code: "CountsUnavailable", message: "this hub keeps no counters (it has no database)")
        }
        let counts = try await counter.counts()
        var tags: [CountsBody.ExpressionCount] = []
        for (text, expression) in expressions {
            tags.append(.init(expression: text, audience: try await hub.installations.audienceCount(expression)))
        }
        let body = CountsBody(
            installations: counts.installations, expired: counts.expired, registrations: counts.registrations,
            platforms: counts.platforms.sorted { $0.key < $1.key }.map {
                .init(
                    platform: $0.key, installations: $0.value.installations, expired: $0.value.expired,
                    registrations: $0.value.registrations)
            },
            tags: tags)
        var response = try api.json(body)
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
