import Foundation
import HubTestSupport
import Testing

@testable import NotificationHub

/// Which claimed notifications are split into partitions: those whose audience may be larger than the split
/// threshold, judged from tag counts where tags bound the audience and from the audience query where they do not.
@Suite struct AudienceSplitTests {
    static let format = NotificationFormat("testformat")

    /// Claims each expression's notification alone (4 partitions per node, split above 10 devices) and reports
    /// whether it was split.
    func splits(_ expressions: [String], backend: TestBackend) async throws -> [String: Bool] {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                _ = try await store.upsert(contentsOf: Self.installations)
                let notifications = SQLNotificationStore(database: store.database)
                var result: [String: Bool] = [:]
                for (offset, text) in expressions.enumerated() {
                    let audience: Audience = text == "*" ? .all : .tags(try TagExpression(parsing: text))
                    let notification = Notification(format: Self.format, body: "x", audience: audience)
                    _ = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
                    let claims = try await notifications.claim(
                        ClaimRequest(
                            owner: "w", leaseSeconds: 60, now: Date(timeIntervalSince1970: 1_900_000_000 + Double(offset)),
                            partitionsPerNode: 4, splitAbove: 10, limit: 64))
                    // Open partitions of the notifications split before come first.
                    let mine = claims.lazy.compactMap { claim -> DeliveryWork? in
                        guard case .work(let work) = claim, work.record.notification.id == notification.id else { return nil }
                        return work
                    }.first
                    guard let work = mine, work.partition == 0 else {
                        Issue.record("no work for \(text): \(claims)")
                        continue
                    }
                    result[text] = work.upperBound != nil
                }
                return result
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func audiencesBoundedByTagsAreSplitOnlyWhenTheBoundIsAboveTheThreshold(backend: TestBackend) async throws {
        let split = try await splits(
            [
                "big", "small", "small || other", "big && small", "big || small", "small && !other", "big && !small",
                "(small || other) && big",
            ],
            backend: backend)
        // 20 > 10: split. 8 (5 + 3) and 8 + 8 = 16 counted for "small || other", an upper bound of the 13 real
        // matches: split. An AND is bounded by its smallest operand.
        #expect(split["big"] == true)
        #expect(split["small"] == false)
        #expect(split["small || other"] == true)
        #expect(split["big && small"] == false)
        #expect(split["big || small"] == true)
        #expect(split["small && !other"] == false)
        #expect(split["big && !small"] == true)
        #expect(split["(small || other) && big"] == true)
    }

    @Test(arguments: TestBackend.all)
    func audiencesNoTagBoundsAreCountedByTheirQuery(backend: TestBackend) async throws {
        let split = try await splits(["*", "!big", "!(small || other || big)", "small || !big"], backend: backend)
        #expect(split["*"] == true)  // 35 installations
        #expect(split["!big"] == true)  // 15
        #expect(split["!(small || other || big)"] == false)  // 2
        #expect(split["small || !big"] == true)  // 15
    }

    /// Sends each expression's notification with a claim at accept (4 partitions per node, split above 10 devices),
    /// one after another and then all at once (so that they share a stored batch), and reports which were left for
    /// a claim to split instead of being leased at once. Each send's stored state is checked against its answer.
    func leftForSplitAtAccept(_ expressions: [String], backend: TestBackend) async throws -> [[String: Bool]] {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                _ = try await store.upsert(contentsOf: Self.installations)
                let notifications = SQLNotificationStore(database: store.database)
                let claim = ClaimRequest(
                    owner: "w", leaseSeconds: 60, now: Date(timeIntervalSince1970: 1_900_000_000), partitionsPerNode: 4,
                    splitAbove: 10)
                @Sendable func send(_ text: String) async throws -> (String, Bool) {
                    let audience: Audience =
                        text == "*" ? .all : text.hasPrefix("$") ? .handles(Platform("test"), [.handle("dev-b0")]) : .tags(try TagExpression(parsing: text))
                    let notification = Notification(format: Self.format, body: "x", audience: audience)
                    let stored = try await notifications.enqueue(
                        notification, scheduledTime: nil, idempotencyKey: nil, claim: claim)
                    #expect(stored.stored && stored.id == notification.id)
                    let state = try await notifications.record(id: notification.id)?.state
                    #expect(state == (stored.claimed == nil ? .enqueued : .processing), "\(text)")
                    return (text, stored.claimed == nil)
                }
                var oneByOne: [String: Bool] = [:]
                for text in expressions {
                    let (text, left) = try await send(text)
                    oneByOne[text] = left
                }
                let together = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                    for text in expressions { group.addTask { try await send(text) } }
                    return try await group.reduce(into: [String: Bool]()) { $0[$1.0] = $1.1 }
                }
                return [oneByOne, together]
            }
        }
    }

    /// 20 "big", 5 "small", 5 "other", 3 with both "small" and "other"; 2 with none.
    static var installations: [Installation] {
        var installations = (0..<20).map { InstallationStoreTests.installation("b\($0)", tags: ["big"]) }
        installations += (0..<5).map { InstallationStoreTests.installation("s\($0)", tags: ["small"]) }
        installations += (0..<5).map { InstallationStoreTests.installation("o\($0)", tags: ["other"]) }
        installations += (0..<3).map { InstallationStoreTests.installation("so\($0)", tags: ["small", "other"]) }
        installations += (0..<2).map { InstallationStoreTests.installation("n\($0)") }
        return installations
    }

    @Test(arguments: TestBackend.all)
    func sendsClaimedAtAcceptAreLeftForASplitByTheSameBounds(backend: TestBackend) async throws {
        let expected = [
            "big": true, "small": false, "small || other": true, "big && small": false, "big || small": true,
            "small && !other": false, "big && !small": true, "(small || other) && big": true,
            "small && other && big": false, "*": true, "!big": true, "!(small || other || big)": false,
            "small || !big": true, "$direct": false,
        ]
        for (round, answer) in try await leftForSplitAtAccept(Array(expected.keys), backend: backend).enumerated() {
            #expect(answer == expected, "round \(round)")
        }
    }

    @Test func boundsFollowTheExpressionsSetAlgebra() throws {
        let counts = ["a": 3, "b": 7, "c": 1001]
        func bound(_ text: String) throws -> Int? {
            SQLNotificationStore.upperBound(try TagExpression(parsing: text), counts: counts)
        }
        #expect(try bound("a") == 3)
        #expect(try bound("a && b") == 3)
        #expect(try bound("a || b") == 10)
        #expect(try bound("a && !b") == 3)
        #expect(try bound("!a") == nil)
        #expect(try bound("a || !b") == nil)
        #expect(try bound("(a || b) && c") == 10)
        #expect(SQLNotificationStore.boundingTags(try TagExpression(parsing: "a && !b")) == ["a"])
        #expect(SQLNotificationStore.boundingTags(try TagExpression(parsing: "a || !b")).isEmpty)
    }
}
