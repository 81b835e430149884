@testable import AdapterKit
import NIOCore
import NIOPosix
import Testing

/// Platform connections run on event loops of their own, apart from the API's.
@Suite struct PlatformEventLoopsTests {
    @Test func platformEventLoopsAreNotTheSingletonGroup() {
        let platform = Set(PlatformEventLoops.shared.makeIterator().map { ObjectIdentifier($0) })
        let singleton = Set(MultiThreadedEventLoopGroup.singleton.makeIterator().map { ObjectIdentifier($0) })
        #expect(platform.isDisjoint(with: singleton))
        #expect(platform.count == System.coreCount)
    }

    /// On Linux every platform thread is scheduled as batch work; the API's threads keep the normal policy.
    @Test func platformThreadsAreBatchWorkAndTheAPIsAreNot() async throws {
        #if os(Linux)
        for loop in PlatformEventLoops.shared.makeIterator() {
            #expect(try await loop.submit { PlatformEventLoops.isBatchScheduled }.get())
        }
        for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            #expect(try await loop.submit { PlatformEventLoops.isBatchScheduled }.get() == false)
        }
        #else
        #expect(PlatformEventLoops.isBatchScheduled == false)
        #endif
    }
}
