import Glibc
@testable import HubServer
import HubTestSupport
import Logging
import Testing

/// The hub raises its soft open-file limit to the hard limit at start: connections, every hub's database files and
/// every adapter's connections count against it.
@Suite struct OpenFileLimitTests {
    static func limit() -> rlimit {
        var limit = rlimit()
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return limit
    }

    @Test func theSoftLimitIsRaisedToTheHardLimit() throws {
        let before = Self.limit()
        // Lowered first (as on a system whose default soft limit is 1,024), unless it is that low already.
        var lowered = before
        lowered.rlim_cur = min(before.rlim_cur, 512)
        try #require(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lowered) == 0)
        HubApplication.raiseFileDescriptorLimit(toAtLeast: 256, logger: Logger.forTest("test"))
        let after = Self.limit()
        #expect(after.rlim_cur == before.rlim_max)
        #expect(after.rlim_max == before.rlim_max)
    }
}
