import AdapterKit
import Foundation
import Synchronization
import Testing

@Suite struct TokenCacheTests {
    struct Refused: Error {}

    /// A fetch that waits until released, counting how often it ran.
    final class Gate: Sendable {
        let started = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Result<String, Refused>>.makeStream()
        let calls = Mutex(0)

        func fetch() async throws -> String {
            let call = calls.withLock { value -> Int in
                value += 1
                return value
            }
            started.continuation.yield()
            var iterator = release.stream.makeAsyncIterator()
            guard let result = await iterator.next() else { throw CancellationError() }
            return try result.get() + "-\(call)"
        }
    }

    @Test func concurrentCallersShareOneFetch() async throws {
        let gate = Gate()
        let clock = ManualWallClock()
        let cache = TokenCache<SingleToken, String>(clock: clock) { .init(try await gate.fetch(), refreshAt: clock.now() + 60) }
        try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask { try await cache.token() }
            var started = gate.started.stream.makeAsyncIterator()
            await started.next()
            // The first fetch is in flight: every later caller waits for it.
            for _ in 0..<20 { group.addTask { try await cache.token() } }
            gate.release.continuation.yield(.success("token"))
            var tokens: [String] = []
            for try await token in group { tokens.append(token) }
            #expect(tokens == Array(repeating: "token-1", count: 21))
        }
        #expect(await cache.fetchCount == 1)
        #expect(gate.calls.withLock { $0 } == 1)
    }

    @Test func aFailedFetchReachesEveryWaiterAndIsNotCached() async throws {
        let gate = Gate()
        let clock = ManualWallClock()
        let cache = TokenCache<SingleToken, String>(clock: clock) { .init(try await gate.fetch(), refreshAt: clock.now() + 60) }
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await cache.token()) == nil }
            var started = gate.started.stream.makeAsyncIterator()
            await started.next()
            for _ in 0..<5 { group.addTask { (try? await cache.token()) == nil } }
            gate.release.continuation.yield(.failure(Refused()))
            for await failed in group { #expect(failed) }
        }
        gate.release.continuation.yield(.success("next"))
        #expect(try await cache.token() == "next-2")
        #expect(await cache.fetchCount == 2)
    }

    @Test func tokensAreRenewedAtTheirRefreshTime() async throws {
        let clock = ManualWallClock()
        let counter = Mutex(0)
        let cache = TokenCache<SingleToken, Int>(clock: clock) {
            .init(counter.withLock { $0 += 1; return $0 }, refreshAt: clock.now() + 100)
        }
        #expect(try await cache.token() == 1)
        clock.advance(by: 99)
        #expect(try await cache.token() == 1)
        clock.advance(by: 1)
        #expect(try await cache.token() == 2)
        #expect(await cache.fetchCount == 2)
    }

    @Test func invalidateDropsOnlyTheRejectedToken() async throws {
        let clock = ManualWallClock()
        let counter = Mutex(0)
        let cache = TokenCache<SingleToken, Int>(clock: clock) {
            .init(counter.withLock { $0 += 1; return $0 }, refreshAt: clock.now() + 100)
        }
        #expect(try await cache.token() == 1)
        await cache.invalidate(7)  // not the current token: nothing changes
        #expect(try await cache.token() == 1)
        await cache.invalidate(1)
        #expect(try await cache.token() == 2)
    }

    @Test func keysHaveTheirOwnTokens() async throws {
        let clock = ManualWallClock()
        let cache = TokenCache<String, String>(clock: clock) { key in .init("token for \(key)", refreshAt: clock.now() + 100) }
        #expect(try await cache.token(for: "https://a.example") == "token for https://a.example")
        #expect(try await cache.token(for: "https://b.example") == "token for https://b.example")
        #expect(try await cache.token(for: "https://a.example") == "token for https://a.example")
        #expect(await cache.fetchCount == 2)
    }
}
