import Foundation
import Logging

extension Logger {
    /// The level of the loggers tests give the code under test: `HUB_TEST_LOG_LEVEL` (`trace` … `critical`), else
    /// `warning`. The whole suite runs in one process whose output is one log; at `info` every request and store
    /// migration of hundreds of tests would fill it with lines nobody reads and hide the failures.
    public static let testLevel: Logger.Level =
        ProcessInfo.processInfo.environment["HUB_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) }
        ?? .warning

    /// A logger for the code under test, at ``testLevel``.
    public static func forTest(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = testLevel
        return logger
    }
}

/// What the test process's children must not inherit.
public enum TestChildren {
    /// A `bash -c` prefix that closes every file the shell inherited beyond standard input, output and error.
    ///
    /// A child started with `posix_spawn` inherits every descriptor of the test process that is not close-on-exec:
    /// the sockets and listeners of all the tests running beside it. A long-lived child (the test PostgreSQL server,
    /// PgBouncer, a hub process, chromedriver) would hold them open: a connection a test's server closed would stay
    /// open to its client, and a port a test stopped listening on would still take connections nobody answers.
    public static let closeInheritedFiles =
        #"for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"; done; "#
}
