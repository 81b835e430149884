import Foundation
import HTTPTypes
@testable import HubServer
import NotificationHub
import Testing

/// The token buckets behind `limits.installationWrites`: refill, `Retry-After`, and memory that follows the users
/// who wrote recently.
@Suite struct InstallationWriteLimiterTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aBucketRefillsAtItsRateUpToItsBurst() {
        let limiter = InstallationWriteLimiter(
            limits: InstallationWriteLimits(perUser: .init(perMinute: 30, burst: 2), perKey: nil))
        #expect(limiter.take(.user("alice"), now: Self.start) == nil)
        #expect(limiter.take(.user("alice"), now: Self.start) == nil)
        #expect(limiter.take(.user("alice"), now: Self.start) == 2, "one write every 2 seconds at 30 a minute")
        #expect(limiter.take(.user("alice"), now: Self.start + 1) == 1)
        #expect(limiter.take(.user("alice"), now: Self.start + 2) == nil)
        // A long pause refills no more than the burst.
        #expect(limiter.take(.user("alice"), now: Self.start + 3600) == nil)
        #expect(limiter.take(.user("alice"), now: Self.start + 3600) == nil)
        #expect(limiter.take(.user("alice"), now: Self.start + 3600) != nil)
        // A clock that steps back refills nothing and breaks nothing.
        #expect(limiter.take(.user("alice"), now: Self.start) != nil)
        // Keys are not limited when their limit is off.
        for _ in 0..<100 { #expect(limiter.take(.key("listen"), now: Self.start) == nil) }
        #expect(limiter.bucketCount == 1)
    }

    @Test func bucketsThatFilledUpAgainAreDropped() {
        let limiter = InstallationWriteLimiter(
            limits: InstallationWriteLimits(perUser: .init(perMinute: 60, burst: 1), perKey: nil))
        for index in 0..<2000 { #expect(limiter.take(.user("u\(index)"), now: Self.start) == nil) }
        #expect(limiter.bucketCount == 2000, "none has refilled yet, so none may go")
        // Two seconds later every bucket is full again: the next sweep (when the table reaches 2048) drops them.
        for index in 2000..<2048 { #expect(limiter.take(.user("u\(index)"), now: Self.start + 2) == nil) }
        #expect(limiter.bucketCount == 48)
        // A dropped bucket starts full, as it would have been.
        #expect(limiter.take(.user("u0"), now: Self.start + 2) == nil)
    }

    @Test func managedKeysAndAnonymousCallersAreNotCounted() throws {
        let limiter = InstallationWriteLimiter(
            limits: InstallationWriteLimits(perUser: .init(perMinute: 1, burst: 1), perKey: .init(perMinute: 1, burst: 1)))
        for _ in 0..<10 { try limiter.admit(.key(name: "full", rights: [.listen, .manage]), now: Self.start) }
        try limiter.admit(.key(name: "listen", rights: [.listen]), now: Self.start)
        #expect(throws: APIError.self) { try limiter.admit(.key(name: "listen", rights: [.listen]), now: Self.start) }
        try limiter.admit(.user("alice"), now: Self.start)
        do {
            try limiter.admit(.user("alice"), now: Self.start)
            Issue.record("the second write within a minute must be refused")
        } catch {
            #expect(error.status == .tooManyRequests && error.headers[.retryAfter] == "60")
            #expect(!error.message.contains("alice"), "the message names no user")
        }
    }
}
