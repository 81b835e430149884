import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// `GET /{hub}/rates?seconds=&step=` (Manage): deliveries per second by platform and outcome over the last hour,
/// from this hub process's own counts (the ones `hub_notifications_delivered_total` reports).
struct RatesController {
    let api: HubAPI

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.group().add(middleware: CallerRequirement.manage).get("rates") { try await rates($0, $1) }
        return routes
    }

    struct DeliveryRatesResponse: Encodable {
        struct Series: Encodable {
            var platform: String
            var outcome: String
            /// Deliveries in each bucket of `step` seconds, oldest first.
            var counts: [Int]
        }

        /// The last second covered (exclusive end of the last bucket).
        var end: Date
        var seconds: Int
        var step: Int
        var series: [Series]
    }

    func rates(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let capacity = hub.worker.deliveryRates.capacity
        let seconds = try HubAPI.integer(request, "seconds", default: capacity, in: 1...capacity)
        let step = try HubAPI.integer(request, "step", default: 1, in: 1...seconds)
        // The current second is still counting: the span ends with the last complete one.
        let snapshot = hub.worker.deliveryRates.snapshot(endingAt: api.clock.now() - 1, seconds: seconds, step: step)
        let series = snapshot.series.sorted { $0.key < $1.key }.map {
            DeliveryRatesResponse.Series(platform: $0.key.platform.name, outcome: $0.key.outcome.name, counts: $0.value)
        }
        var response = try api.json(
            DeliveryRatesResponse(
                end: Date(timeIntervalSince1970: TimeInterval(snapshot.end + 1)), seconds: snapshot.seconds,
                step: snapshot.step, series: series))
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
