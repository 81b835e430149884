import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// `GET /{hub}/rates?seconds=&step=` (Manage): deliveries per second by platform and outcome over the last hour,
/// from this hub process's own counts (the ones `hub_notifications_delivered_total` reports).
extension HubAPI {
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

    func deliveryRates(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .manage)
        let query = request.uri.queryParameters
        func integer(_ name: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
            guard let text = query.get(name) else { return value }
            guard let number = Int(text), range.contains(number) else {
                throw APIError.badRequest(
                    "InvalidParameter", "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        let capacity = hub.deliveryRates.capacity
        let seconds = try integer("seconds", default: capacity, in: 1...capacity)
        let step = try integer("step", default: 1, in: 1...seconds)
        // The current second is still counting: the span ends with the last complete one.
        let snapshot = hub.deliveryRates.snapshot(endingAt: clock.now() - 1, seconds: seconds, step: step)
        let series = snapshot.series.sorted { $0.key < $1.key }.map {
            DeliveryRatesResponse.Series(platform: $0.key.platform.name, outcome: $0.key.outcome.name, counts: $0.value)
        }
        var response = try json(
            DeliveryRatesResponse(
                end: Date(timeIntervalSince1970: TimeInterval(snapshot.end + 1)), seconds: snapshot.seconds,
                step: snapshot.step, series: series))
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
