import AdapterKit
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
}
