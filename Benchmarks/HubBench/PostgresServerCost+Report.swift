import BenchmarkSupport

extension PostgresServerCost {
    /// Prints the server's CPU, statements and commits per send between two samples, under `name`.
    func report(_ name: String, from before: Sample, to after: Sample, sends: Int) {
        let sends = Double(max(1, sends))
        let spent = after.spent(since: before)
        if let cpu = spent.cpuSeconds {
            figure("\(name).serverCPUPerSend", 1e6 * cpu / sends, "µs", decimals: 1)
        } else {
            say("  \(name).serverCPUPerSend: the server's processes are not visible here")
        }
        if let statements = spent.statements {
            figure("\(name).statementsPerSend", Double(statements) / sends, "statements", decimals: 2)
        } else {
            say("  \(name).statementsPerSend: pg_stat_statements is not loaded (shared_preload_libraries)")
        }
        figure("\(name).commitsPerSend", Double(spent.commits) / sends, "transactions", decimals: 2)
    }
}
