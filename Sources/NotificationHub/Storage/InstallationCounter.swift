import Foundation

/// Counts a hub's installations and registrations per platform without scanning them: the store keeps counters
/// by platform, kind and expiry, updated by triggers in the transaction of every write (SQLite: in place;
/// PostgreSQL: as appended deltas that a count folds in, so concurrent writers never queue for one counter row).
public struct InstallationCounter: Sendable {
    let database: any HubDatabase

    /// Creates the counter of a hub's database.
    public init(database: any HubDatabase) {
        self.database = database
    }

    /// Deltas folded into the counters per transaction at most.
    static let foldStep = 10_000

    /// The counts now.
    public func counts() async throws -> InstallationCounts {
        try await fold()
        let rows = try await database.read(
            """
            SELECT platform, kind, expired, CAST(SUM(n) AS BIGINT) AS n FROM (
                SELECT platform, kind, expired, n FROM installation_counts
                UNION ALL SELECT platform, kind, expired, delta AS n FROM installation_count_deltas
            ) c GROUP BY platform, kind, expired
            """)
        var counts = InstallationCounts()
        for row in rows {
            guard let platform = row.string("platform"), let kind = row.int("kind"), let n = row.int("n"), n > 0 else {
                continue
            }
            let expired = (row.int("expired") ?? 0) != 0
            var entry = counts.platforms[platform] ?? InstallationCounts.Platform()
            if kind == 0 {
                entry.installations += n
                if expired { entry.expired += n }
            } else {
                entry.registrations += n
            }
            counts.platforms[platform] = entry
        }
        return counts
    }

    /// Moves appended deltas into the counters, a bounded step per transaction. Each delta is deleted and added in
    /// one transaction (`DELETE … RETURNING`), so a delta committed meanwhile is folded by the next pass, never lost
    /// or counted twice.
    func fold(step: Int = InstallationCounter.foldStep) async throws {
        while true {
            let moved = try await database.transaction { connection -> Int in
                let rows = try await connection.query(
                    """
                    DELETE FROM installation_count_deltas WHERE id IN (
                        SELECT id FROM installation_count_deltas ORDER BY id LIMIT \(max(1, step)))
                    RETURNING platform, kind, expired, delta
                    """, [])
                var sums: [String: (platform: String, kind: Int, expired: Int, n: Int)] = [:]
                for row in rows {
                    guard let platform = row.string("platform"), let kind = row.int("kind"),
                        let expired = row.int("expired"), let delta = row.int("delta")
                    else { continue }
                    sums["\(kind)|\(expired)|\(platform)", default: (platform, kind, expired, 0)].n += delta
                }
                for sum in sums.values where sum.n != 0 {
                    _ = try await connection.query(
                        """
                        INSERT INTO installation_counts (platform, kind, expired, n) VALUES (?, ?, ?, ?)
                        ON CONFLICT (platform, kind, expired) DO UPDATE SET n = installation_counts.n + excluded.n
                        """,
                        [.text(sum.platform), .integer(sum.kind), .integer(sum.expired), .integer(sum.n)])
                }
                return rows.count
            }
            if moved < step { return }
        }
    }
}

/// A hub's installation and registration counts per platform.
public struct InstallationCounts: Sendable, Hashable {
    /// One platform's counts.
    public struct Platform: Sendable, Hashable {
        /// Installations, expired ones included.
        public var installations = 0
        /// Installations whose channel expired.
        public var expired = 0
        /// Registrations (Azure's older model).
        public var registrations = 0

        /// Creates counts.
        public init(installations: Int = 0, expired: Int = 0, registrations: Int = 0) {
            self.installations = installations
            self.expired = expired
            self.registrations = registrations
        }
    }

    /// Counts by platform name.
    public var platforms: [String: Platform] = [:]

    /// Creates counts.
    public init(platforms: [String: Platform] = [:]) {
        self.platforms = platforms
    }

    /// Installations of every platform, expired ones included.
    public var installations: Int { platforms.values.reduce(0) { $0 + $1.installations } }
    /// Installations whose channel expired.
    public var expired: Int { platforms.values.reduce(0) { $0 + $1.expired } }
    /// Registrations of every platform.
    public var registrations: Int { platforms.values.reduce(0) { $0 + $1.registrations } }
}
