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
