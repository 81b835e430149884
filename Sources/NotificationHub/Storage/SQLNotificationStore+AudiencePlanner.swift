import Foundation

/// The audience planner: whether a notification's audience is large enough to split, judged from capped tag counts
/// (or by running its query) for a whole batch of notifications at once.
extension SQLNotificationStore {
    /// For each notification, whether its audience may have more than `threshold` matches: it has something to
    /// split (not a direct send) and more than `threshold` installations may match it.
    ///
    /// Most audiences are bounded by the tags they require: a tag's index entries (at most `threshold + 1` of them
    /// read) bound the installations carrying it, an AND by its smallest operand, an OR by the sum of its operands.
    /// The tags of every notification in the batch are counted with one statement of single-table index probes,
    /// which the database plans at once however complex the expressions are. Only audiences that no tag
    /// bounds (a broadcast, a negation at the top) are probed by running their query, up to `threshold + 1` rows.
    /// Counts ignore expiry, platform and row kind, so they never fall short: a large audience is always split,
    /// and a small one is at worst split without need.
    static func audiences(
        of notifications: [Notification], exceed threshold: Int, on connection: any SQLExecutor
    ) async throws -> [Bool] {
        var large = [Bool](repeating: false, count: notifications.count)
        var bounded: [(index: Int, expression: TagExpression, tags: Set<String>)] = []
        var probes: [(index: Int, plan: SQLTagQuery)] = []
        for (index, notification) in notifications.enumerated() {
            switch AudienceSize(notification, threshold: threshold) {
            case .small: continue
            case .large: large[index] = true
            case .bounded(let expression, let tags): bounded.append((index, expression, tags))
            case .counted(let plan): probes.append((index, plan))
            }
        }
        let counts = try await tagCounts(
            bounded.reduce(into: Set<String>()) { $0.formUnion($1.tags) }.sorted(), upTo: threshold + 1, on: connection)
        for (index, expression, _) in bounded {
            large[index] = (Self.upperBound(expression, counts: counts) ?? Int.max) > threshold
        }
        for start in stride(from: 0, to: probes.count, by: 32) {
            let chunk = probes[start..<min(start + 32, probes.count)]
            let columns = chunk.enumerated().map { position, probe in
                "(SELECT COUNT(*) FROM (\(probe.plan.sql)) AS p\(position)) AS c\(position)"
            }
            let rows = try await connection.query("SELECT " + columns.joined(separator: ", "), chunk.flatMap(\.plan.binds))
            for (position, probe) in chunk.enumerated() {
                large[probe.index] = (rows.first?.int("c\(position)") ?? 0) > threshold
            }
        }
        return large
    }

    /// How a notification's audience is judged against a split threshold (see ``audiences(of:exceed:on:)``).
    enum AudienceSize {
        /// Nothing to split: a direct send, or an audience that cannot be read.
        case small
        /// Always split (a threshold of 0).
        case large
        /// Bounded by the counts of `tags` (``upperBound(_:counts:)``).
        case bounded(TagExpression, tags: Set<String>)
        /// Counted by running its query, up to `threshold + 1` rows.
        case counted(SQLTagQuery)

        init(_ notification: Notification, threshold: Int) {
            let expression: TagExpression?
            switch notification.audience {
            case .handles, .unreadable:
                self = .small
                return
            case .all: expression = nil
            case .tags(let tags): expression = tags
            }
            guard threshold > 0 else {
                self = .large
                return
            }
            if let expression, case let tags = SQLNotificationStore.boundingTags(expression), !tags.isEmpty {
                self = .bounded(expression, tags: tags)
                return
            }
            let query = InstallationQuery(
                expression: expression, scope: notification.format == .template ? .includingTemplates : .installation,
                includeExpired: false)
            self = .counted(SQLTagQuery(query: query, after: 0, limit: threshold + 1, ridsOnly: true))
        }
    }

    /// How many tag rows (of any scope) carry `tag`, counting at most `limit`: a single-table index probe (both are
    /// SQL: a column, a parameter or a literal).
    static func cappedCount(tag: String, limit: String) -> String {
        "(SELECT COUNT(*) FROM (SELECT 1 FROM installation_tags t WHERE t.tag = \(tag) LIMIT \(limit)) AS c)"
    }

    /// How many tag rows (of any scope) carry each tag, counting at most `limit` per tag: one statement per 256
    /// tags whose single correlated index probe the database plans once, however many tags it is run for.
    static func tagCounts(_ tags: [String], upTo limit: Int, on connection: any SQLExecutor) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for start in stride(from: 0, to: tags.count, by: 256) {
            let chunk = tags[start..<min(start + 256, tags.count)]
            let rows = try await connection.query(
                """
                WITH wanted(tag) AS (VALUES \(Array(repeating: "(?)", count: chunk.count).joined(separator: ", ")))
                SELECT wanted.tag AS tag, \(cappedCount(tag: "wanted.tag", limit: "\(limit)")) AS n FROM wanted
                """,
                chunk.map { .text($0) })
            for row in rows { if let tag = row.string("tag") { counts[tag] = row.int("n") ?? limit } }
            // A tag the answer left out is counted as large: a split is never missed.
            for tag in chunk where counts[tag] == nil { counts[tag] = limit }
        }
        return counts
    }

    /// The tags whose counts bound `expression`'s matches; empty when no tag bounds it (a negation at the top, or
    /// an OR with a negated branch).
    static func boundingTags(_ expression: TagExpression) -> Set<String> {
        switch expression {
        case .tag(let tag): return [tag]
        case .not: return []
        case .and(let operands):
            // Every operand that is bounded is counted; the smallest wins.
            return operands.reduce(into: Set()) { $0.formUnion(boundingTags($1)) }
        case .or(let operands):
            var tags: Set<String> = []
            for operand in operands {
                let branch = boundingTags(operand)
                if branch.isEmpty { return [] }
                tags.formUnion(branch)
            }
            return tags
        }
    }

    /// An upper bound on the installations `expression` matches, from per-tag counts; `nil` when unbounded.
    static func upperBound(_ expression: TagExpression, counts: [String: Int]) -> Int? {
        switch expression {
        case .tag(let tag): return counts[tag]
        case .not: return nil
        case .and(let operands): return operands.compactMap { upperBound($0, counts: counts) }.min()
        case .or(let operands):
            var total = 0
            for operand in operands {
                guard let bound = upperBound(operand, counts: counts) else { return nil }
                total += bound
            }
            return total
        }
    }

    /// ``upperBound(_:counts:)`` as an SQL expression over a `counts(k, n)` table: each tag's count is looked up by
    /// its number in `tags`, which gains the tags not numbered yet. `nil` when unbounded.
    static func upperBoundSQL(_ expression: TagExpression, tags: inout [String: Int]) -> String? {
        switch expression {
        case .tag(let tag):
            let number = tags[tag] ?? tags.count
            tags[tag] = number
            return "(SELECT n FROM counts WHERE k = \(number))"
        case .not: return nil
        case .and(let operands):
            let bounds = operands.compactMap { upperBoundSQL($0, tags: &tags) }
            guard let first = bounds.first else { return nil }
            return bounds.count == 1 ? first : "LEAST(\(bounds.joined(separator: ", ")))"
        case .or(let operands):
            var bounds: [String] = []
            for operand in operands {
                guard let bound = upperBoundSQL(operand, tags: &tags) else { return nil }
                bounds.append(bound)
            }
            return "(\(bounds.joined(separator: " + ")))"
        }
    }
}
