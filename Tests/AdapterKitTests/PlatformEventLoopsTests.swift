import AdapterKit
import NIOCore
import NIOPosix
import Testing

/// Platform connections run on event loops of their own, at a lower priority than the API's.
@Suite struct PlatformEventLoopsTests {
    #if os(Linux)
    @Test func platformThreadsRunAtALowerPriorityThanTheRestOfTheProcess() async throws {
        let ours = PlatformEventLoops.currentThreadNiceness()
        for loop in PlatformEventLoops.shared.makeIterator() {
            let theirs = try await loop.submit { PlatformEventLoops.currentThreadNiceness() }.get()
            #expect(theirs == min(19, ours + PlatformEventLoops.niceness))
        }
    }
    #endif

    @Test func platformEventLoopsAreNotTheSingletonGroup() {
        let platform = Set(PlatformEventLoops.shared.makeIterator().map { ObjectIdentifier($0) })
        let singleton = Set(MultiThreadedEventLoopGroup.singleton.makeIterator().map { ObjectIdentifier($0) })
        #expect(platform.isDisjoint(with: singleton))
        #expect(platform.count == System.coreCount)
    }
}
