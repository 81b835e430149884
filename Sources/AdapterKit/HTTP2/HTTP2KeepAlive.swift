import NIOCore

/// The keep-alive PING schedule of one connection and its verdict on whether the server still answers.
///
/// A PING is sent at every tick unless one is outstanding; an outstanding PING not acknowledged within the timeout
/// makes the connection dead. Time during which the connection's own event loop could not run does not count
/// against the server: a tick that runs late (the loop was held up by other work, or the thread got no CPU) moves
/// the PING's deadline by as much, because an acknowledgement may have been waiting to be read all along.
struct HTTP2KeepAlive {
    /// What to do at a tick.
    enum Action: Equatable {
        /// Send a PING now.
        case sendPing
        /// A PING is outstanding and still within its time.
        case wait
        /// The outstanding PING was not acknowledged in time: close the connection.
        case closeConnection
    }

    let interval: TimeAmount
    let timeout: TimeAmount
    /// When the next tick is due.
    private(set) var nextTick: NIODeadline
    /// When the outstanding PING counts as lost; `nil` when none is outstanding.
    private(set) var pingDeadline: NIODeadline?

    /// A schedule whose first tick is due one interval after `now`.
    init(interval: TimeAmount, timeout: TimeAmount, now: NIODeadline) {
        self.interval = interval
        self.timeout = timeout
        self.nextTick = now + interval
    }

    /// The tick due at ``nextTick``, run at `now`; schedules the next one.
    mutating func tick(now: NIODeadline) -> Action {
        let late = now - nextTick
        nextTick = now + interval
        guard let deadline = pingDeadline else {
            pingDeadline = now + timeout
            return .sendPing
        }
        // The loop did not run for `late`: the acknowledgement may have been waiting unread.
        let moved = late > .zero ? deadline + late : deadline
        pingDeadline = moved
        return now >= moved ? .closeConnection : .wait
    }

    /// The server acknowledged the outstanding PING.
    mutating func acknowledged() {
        pingDeadline = nil
    }
}
