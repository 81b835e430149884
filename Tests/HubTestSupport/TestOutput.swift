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
