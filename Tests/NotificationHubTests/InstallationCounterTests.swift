import Foundation
import HubTestSupport
import Testing

@testable import NotificationHub

/// Installation counts come from counters the store keeps in the transaction of every write, on both databases:
/// inserts, replacements that change the platform, expiry marks and deletions all move them, and a count folds
/// PostgreSQL's appended deltas in without losing or repeating one.
@Suite struct InstallationCounterTests {
    static func installation(_ id: String, platform: String) -> Installation {
        Installation(installationID: id, platform: Platform(platform), pushChannel: .handle("dev-\(id)"), tags: ["t"])
    }

    @Test(arguments: TestBackend.all)
    func countsFollowEveryKindOfWrite(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                let counter = InstallationCounter(database: store.database)
                #expect(try await counter.counts() == InstallationCounts())
                try await store.upsert(
                    contentsOf: (0..<5).map { Self.installation("a\($0)", platform: "apns") }
                        + (0..<3).map { Self.installation("f\($0)", platform: "fcmv1") })
                _ = try await store.upsert(Self.installation("w0", platform: "wns"))
                var counts = try await counter.counts()
                #expect(counts.platforms["apns"]?.installations == 5)
                #expect(counts.platforms["fcmv1"]?.installations == 3)
                #expect(counts.platforms["wns"]?.installations == 1)
                #expect(counts.installations == 9 && counts.expired == 0 && counts.registrations == 0)

                // A replacement on another platform moves the device; one of the same platform changes nothing.
                _ = try await store.upsert(Self.installation("f0", platform: "apns"))
                _ = try await store.upsert(Self.installation("a1", platform: "apns"))
                #expect(try await store.markChannelExpired(installationID: "a2", pushChannel: .handle("dev-a2"), notUpdatedAfter: nil))
                #expect(try await store.delete(id: "w0"))
                counts = try await counter.counts()
                #expect(counts.platforms["apns"] == InstallationCounts.Platform(installations: 6, expired: 1, registrations: 0))
                #expect(counts.platforms["fcmv1"]?.installations == 2)
                #expect(counts.platforms["wns"] == nil)
                #expect(counts.installations == 8 && counts.expired == 1)

                // A second count reads the same (folded) numbers; nothing is left to fold.
                #expect(try await counter.counts() == counts)
                let deltas = try await store.database.read("SELECT COUNT(*) AS n FROM installation_count_deltas")
                #expect(deltas.first?.int("n") == 0)

                // The counts agree with a scan of the table.
                let scanned = try await store.database.read(
                    "SELECT platform, COUNT(*) AS n FROM installations WHERE kind = 0 GROUP BY platform")
                for row in scanned {
                    #expect(counts.platforms[row.string("platform") ?? ""]?.installations == row.int("n"))
                }
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func foldingInStepsLosesNothing(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                try await store.upsert(contentsOf: (0..<250).map { Self.installation("d\($0)", platform: "apns") })
                for index in 0..<40 { _ = try await store.delete(id: "d\(index)") }
                let counter = InstallationCounter(database: store.database)
                try await counter.fold(step: 7)
                #expect(try await counter.counts().platforms["apns"]?.installations == 210)
            }
        }
    }
}
