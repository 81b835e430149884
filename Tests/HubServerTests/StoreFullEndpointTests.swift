import Foundation
import HTTPTypes
import HubTestSupport
import HummingbirdTesting
@testable import NotificationHub
import Testing

/// A hub whose store's disk is full answers writes with `503 StoreFull` and `Retry-After`, and `/healthz` says the
/// store is degraded until a write succeeds again (after the hold time).
@Suite struct StoreFullEndpointTests {
    /// Lets the hub's SQLite store add no page to what it holds now: the next write that needs space is refused with
    /// `SQLITE_FULL`, as on a full disk. `maximum` gives the room back.
    static func limitPages(_ database: any HubDatabase, to maximum: Int? = nil) async throws {
        _ = try await database.transaction { connection in
            let pages = try await connection.query("PRAGMA page_count", []).first?.int("page_count") ?? 1
            return try await connection.query("PRAGMA max_page_count = \(maximum ?? pages)", [])
        }
    }

    @Test func aFullDiskAnswers503StoreFullWithRetryAfterAndHealthzReportsTheStoreDegraded() async throws {
        try await APITestHarness.run { api in
            let database = try #require(api.hub.core.database)
            #expect(try await api.request(.get, "/healthz", key: nil).json?["status"] as? String == "ok")
            try await Self.limitPages(database)

            // Installations with many tags need new pages soon; the first refused one is the answer checked.
            var refused: TestResponse?
            for index in 0..<300 {
                let tags = (0..<50).map { "tag\(index)x\($0)" }
                let put = try await api.request(
                    .put, "/demo/installations/full-\(index)",
                    body: APITestHarness.installationJSON("full-\(index)", tags: tags))
                if put.status != .ok {
                    refused = put
                    break
                }
            }
            let answer = try #require(refused, "300 installations were stored: the store never refused one")
            #expect(answer.status == .serviceUnavailable)
            #expect(answer.errorCode == "StoreFull")
            let message = try #require(answer.errorMessage)
            #expect(message.contains("disk") && message.contains("full"), "\(message)")
            #expect(Int(answer.headers[.retryAfter] ?? "") ?? 0 > 0)

            // A send is refused the same way (once what is left of the last page is used), in Azure's XML too.
            var send = answer
            for _ in 0..<50 {
                send = try await api.request(
                    .post, "/demo/messages", key: "send", headers: SendEndpointTests.headers(),
                    body: String(repeating: "y", count: 1500), acceptJSON: false)
                if send.status != .created { break }
            }
            #expect(send.status == .serviceUnavailable)
            #expect(send.text.contains("<ErrorCode>StoreFull</ErrorCode>"))
            #expect(send.errorCode == "StoreFull")
            #expect(send.headers[.retryAfter] != nil)

            let degraded = try await api.request(.get, "/healthz", key: nil)
            #expect(degraded.status == .ok)
            let health = try #require(degraded.json)
            #expect(health["status"] as? String == "degraded")
            let stores = try #require(health["stores"] as? [[String: Any]])
            #expect(stores.count == 1)
            #expect(stores.first?["hub"] as? String == "demo")
            #expect(stores.first?["status"] as? String == "degraded")
            #expect((stores.first?["reason"] as? String)?.contains("full") == true)
            #expect(stores.first?["since"] != nil)

            // Room again: the next write after the hold time succeeds and the store is healthy.
            try await Self.limitPages(database, to: 1_073_741_823)
            database.condition.holdSeconds = 0
            let put = try await api.request(
                .put, "/demo/installations/after", body: APITestHarness.installationJSON("after", tags: ["t"]))
            #expect(put.status == .ok)
            let healthy = try #require(try await api.request(.get, "/healthz", key: nil).json)
            #expect(healthy["status"] as? String == "ok")
            #expect(healthy["stores"] == nil)
        }
    }
}
