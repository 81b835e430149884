import Foundation
import Logging
import HubTestSupport
@testable import NotificationHub
import Testing

@Suite struct InstallationStoreTests {
    /// A store on a fresh database of the current ``TestBackend``.
    static func makeStore(clock: any WallClock = SystemWallClock()) async throws -> SQLInstallationStore {
        SQLInstallationStore(database: try await TestBackend.openDatabase(), clock: clock)
    }

    static func withStore<T: Sendable>(
        clock: any WallClock = SystemWallClock(), _ body: (SQLInstallationStore) async throws -> T
    ) async throws -> T {
        let store = try await makeStore(clock: clock)
        do {
            let result = try await body(store)
            try await store.database.close()
            return result
        } catch {
            try? await store.database.close()
            throw error
        }
    }

    static func installation(_ id: String, tags: [String] = [], user: String? = nil) -> Installation {
        Installation(installationID: id, userID: user, platform: Platform("test"), pushChannel: .handle("dev-\(id)"), tags: tags)
    }

    @Test(arguments: TestBackend.all)
    func upsertGetDeleteRoundTrip(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock()
            try await Self.withStore(clock: clock) { store in
                var installation = Self.installation("a", tags: ["x", "y"], user: "alice")
                installation.templates = ["t": InstallationTemplate(body: #"{"a":"$(m)"}"#, headers: ["h": "v"], tags: ["tt"])]
                let stored = try await store.upsert(installation)
                #expect(stored.lastUpdate == clock.now())
                let read = try #require(try await store.installation(id: "a"))
                #expect(read == stored)
                #expect(try await store.delete(id: "a"))
                #expect(try await store.installation(id: "a") == nil)
                #expect(try await store.delete(id: "a") == false)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func anAddressReadCarriesWhereASendGoesAndNothingElse(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore() { store in
                var first = Self.installation("a", tags: ["news", "x"], user: "alice")
                first.templates = ["t": InstallationTemplate(body: #"{"a":"$(m)"}"#, tags: ["tt"])]
                var second = Self.installation("b", tags: ["news"])
                second.pushChannel = .object(["endpoint": "https://push.example/1", "p256dh": "k", "auth": "a"])
                _ = try await store.upsert(contentsOf: [first, second, Self.installation("c", tags: ["other"])])
                let expression = try TagExpression(parsing: "news")
                let whole = try await store.query(InstallationQuery(expression: expression), after: nil, limit: 10)
                let address = try await store.query(InstallationQuery(expression: expression, detail: .address), after: nil, limit: 10)
                #expect(whole.installations.map(\.installationID) == ["a", "b"])
                #expect(address.installations.map(\.installationID) == ["a", "b"])
                #expect(address.installations.map(\.pushChannel) == [first.pushChannel, second.pushChannel])
                #expect(address.installations.map(\.platform) == [first.platform, second.platform])
                #expect(address.installations.allSatisfy { $0.tags.isEmpty && $0.templates.isEmpty && $0.userID == nil })
                #expect(whole.installations.first?.templates == first.templates)
                // Paging is the same either way.
                let page = try await store.query(InstallationQuery(expression: expression, detail: .address), after: nil, limit: 1)
                let next = try await store.query(InstallationQuery(expression: expression, detail: .address), after: page.next, limit: 1)
                #expect(page.installations.map(\.installationID) == ["a"] && next.installations.map(\.installationID) == ["b"])
                // What a native send to one tag reads (a statement of its own where the database keeps it prepared):
                // the same devices, page by page, and only on the send's platforms.
                func send(_ platforms: [Platform], after cursor: InstallationCursor? = nil, limit: Int = 10) async throws -> InstallationPage {
                    try await store.query(
                        InstallationQuery(
                            expression: expression, platforms: platforms, includeExpired: false, kinds: .nativeSends, detail: .address),
                        after: cursor, limit: limit)
                }
                let sent = try await send([first.platform])
                #expect(sent.installations.map(\.installationID) == ["a", "b"] && sent.next == nil)
                #expect(sent.installations.map(\.pushChannel) == [first.pushChannel, second.pushChannel])
                let firstPage = try await send([first.platform], limit: 1)
                #expect(firstPage.installations.map(\.installationID) == ["a"])
                #expect(try await send([first.platform], after: firstPage.next, limit: 1).installations.map(\.installationID) == ["b"])
                #expect(try await send([Platform("other")]).installations.isEmpty)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func objectPushChannelsRoundTrip(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore() { store in
                var installation = Self.installation("web")
                installation.pushChannel = .object(["endpoint": "https://push.example/1", "p256dh": "k", "auth": "a"])
                _ = try await store.upsert(installation)
                #expect(try await store.installation(id: "web")?.pushChannel == installation.pushChannel)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func replacingKeepsOrderAndReplacesTags(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore() { store in
                _ = try await store.upsert(Self.installation("a", tags: ["old"]))
                _ = try await store.upsert(Self.installation("b", tags: ["old"]))
                _ = try await store.upsert(Self.installation("a", tags: ["new"]))
                let old = try await store.query(InstallationQuery(expression: .tag("old")), after: nil, limit: 10)
                #expect(old.installations.map(\.installationID) == ["b"])
                let all = try await store.query(InstallationQuery(), after: nil, limit: 10)
                #expect(all.installations.map(\.installationID) == ["a", "b"])
            }
        }
    }

    /// The tag index entries of installation `id`, as `tag/scope`, sorted.
    static func indexEntries(of id: String, in store: SQLInstallationStore) async throws -> [String] {
        try await store.database.read(
            "SELECT t.tag, t.scope FROM installation_tags t JOIN installations i ON i.rid = t.rid WHERE i.id = ?", [.text(id)]
        ).map { "\($0.string("tag") ?? "?")/\($0.int("scope") ?? -1)" }.sorted()
    }

    /// A lone write is one call where the database has one (PostgreSQL's `hub_put_installation`; SQLite writes in a
    /// transaction): the row is written, every scope of its tag index replaced, and a guarded write of a row it may
    /// not replace writes nothing, neither row nor tags, and says why.
    @Test(arguments: TestBackend.all)
    func aLoneWriteReplacesEveryScopeOfTheTagIndexOrNothing(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore(clock: ManualWallClock()) { store in
                var first = Self.installation("a", tags: ["old", "kept"], user: "alice")
                first.templates = ["t": InstallationTemplate(body: #"{"a":"$(m)"}"#, tags: ["oldTemplate"])]
                let direct = try await store.database.putInstallation(
                    InstallationPut(
                        row: try SQLInstallationStore.rowValues(first), guarded: false,
                        tags: SQLInstallationStore.tagEntries(of: first)))
                #expect(direct == (backend == .postgres ? true : nil))
                _ = try await store.upsert(first, as: .user("alice"))
                #expect(
                    try await Self.indexEntries(of: "a", in: store)
                        == ["$InstallationId:{a}/0", "$UserId:{alice}/0", "kept/0", "old/0", "oldTemplate/1", "t/2"])
                var second = Self.installation("a", tags: ["kept", "new"], user: "alice")
                second.templates = ["t": InstallationTemplate(body: #"{"a":"$(m)"}"#, tags: ["newTemplate"])]
                let stored = try await store.upsert(second, as: .user("alice"))
                // The template's name is one of its tags, in a scope of its own (2).
                let expected = ["$InstallationId:{a}/0", "$UserId:{alice}/0", "kept/0", "new/0", "newTemplate/1", "t/2"]
                #expect(try await store.installation(id: "a") == stored)
                #expect(try await Self.indexEntries(of: "a", in: store) == expected)

                // Another user's guarded write is refused whole.
                let taken = Self.installation("a", tags: ["bob's"], user: "bob")
                await #expect {
                    try await store.upsert(taken, as: .user("bob"))
                } throws: {
                    ($0 as? HubError)?.code == .conflict && "\($0)".contains("belongs to another user")
                }
                if backend == .postgres {
                    let refused = try await store.database.putInstallation(
                        InstallationPut(
                            row: try SQLInstallationStore.rowValues(taken), guarded: true,
                            tags: SQLInstallationStore.tagEntries(of: taken)))
                    #expect(refused == false)
                }
                #expect(try await store.installation(id: "a") == stored)
                #expect(try await Self.indexEntries(of: "a", in: store) == expected)
            }
        }
    }

    /// Two stores on one database write one id at once, each write alone (on PostgreSQL each a call of its own,
    /// racing on the server): whichever write lands last, the tag index holds exactly its tags.
    @Test(arguments: TestBackend.all)
    func racingLoneWritesLeaveTheTagIndexOfTheLastWrite(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore() { store in
                let other = SQLInstallationStore(database: store.database)
                for round in 0..<20 {
                    async let left = store.upsert(Self.installation("a", tags: ["left", "l\(round)"]))
                    async let right = other.upsert(Self.installation("a", tags: ["right", "r\(round)"]))
                    _ = try await (left, right)
                    let stored = try #require(try await store.installation(id: "a"))
                    let expected = (stored.tags.map { "\($0)/0" } + ["$InstallationId:{a}/0"]).sorted()
                    #expect(try await Self.indexEntries(of: "a", in: store) == expected, "round \(round)")
                }
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func updateIsAtomicAndNotFoundIsReported(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore() { store in
                _ = try await store.upsert(Self.installation("a", tags: []))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            _ = try await store.update(id: "a") { installation in installation.tags.append("t\(index)") }
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await store.installation(id: "a")?.tags.count == 50)
                await #expect {
                    try await store.update(id: "missing") { _ in }
                } throws: { ($0 as? HubError)?.code == .notFound }
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func parallelWritersDoNotLoseWrites(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore() { store in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<200 {
                        group.addTask { _ = try await store.upsert(Self.installation("i\(index)", tags: ["all", "n\(index % 7)"])) }
                    }
                    try await group.waitForAll()
                }
                #expect(try await store.count(InstallationQuery(expression: .tag("all"))) == 200)
                #expect(try await store.count(InstallationQuery(expression: .tag("n3"))) == (0..<200).filter { $0 % 7 == 3 }.count)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func keysetPagingVisitsEveryMatchOnce(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore() { store in
                for index in 0..<95 { _ = try await store.upsert(Self.installation("i\(index)", tags: index % 2 == 0 ? ["even"] : ["odd"])) }
                var seen: [String] = []
                for try await page in store.pages(InstallationQuery(expression: .tag("even")), pageSize: 10) {
                    #expect(page.installations.count <= 10)
                    seen += page.installations.map(\.installationID)
                }
                #expect(seen == (0..<95).filter { $0 % 2 == 0 }.map { "i\($0)" })
                let first = try await store.query(InstallationQuery(), after: nil, limit: 10)
                let token = try #require(first.next?.token)
                let second = try await store.query(InstallationQuery(), after: try InstallationCursor(token: token), limit: 10)
                #expect(second.installations.first?.installationID == "i10")
                #expect(throws: HubError.self) { try InstallationCursor(token: "!!") }
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func systemTagsAreQueryable(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withStore() { store in
                _ = try await store.upsert(Self.installation("a", user: "alice"))
                _ = try await store.upsert(Self.installation("b", user: "bob"))
                let byUser = try await store.query(
                    InstallationQuery(expression: try TagExpression(parsing: "$UserId:alice")), after: nil, limit: 10)
                #expect(byUser.installations.map(\.installationID) == ["a"])
                let byID = try await store.query(
                    InstallationQuery(expression: try TagExpression(parsing: "$InstallationId:{b}")), after: nil, limit: 10)
                #expect(byID.installations.map(\.installationID) == ["b"])
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func expiredChannelsAreMarkedOnlyIfNotUpdatedSince(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock()
            try await Self.withStore(clock: clock) { store in
                _ = try await store.upsert(Self.installation("a"))
                let before = clock.now() - 10
                #expect(try await store.markChannelExpired(installationID: "a", pushChannel: .handle("dev-a"), notUpdatedAfter: before) == false)
                #expect(try await store.markChannelExpired(installationID: "a", pushChannel: .handle("dev-other"), notUpdatedAfter: nil) == false)
                #expect(try await store.markChannelExpired(installationID: "a", pushChannel: .handle("dev-a"), notUpdatedAfter: clock.now() + 1))
                #expect(try await store.installation(id: "a")?.expiredPushChannel == true)
                #expect(try await store.count(InstallationQuery(includeExpired: false)) == 0)
                _ = try await store.update(id: "a") { $0.pushChannel = .handle("dev-new") }
                #expect(try await store.installation(id: "a")?.expiredPushChannel == false)
                #expect(try await store.deleteIfChannel(installationID: "a", pushChannel: .handle("dev-a")) == false)
                #expect(try await store.deleteIfChannel(installationID: "a", pushChannel: .handle("dev-new")))
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func dataSurvivesReopeningAFile(backend: TestBackend) async throws {
        try await backend.run {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString).sqlite").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            do {
                let store = try await SQLInstallationStore.open(storage: .sqlite(path: path), logger: Logger.forTest("test"))
                _ = try await store.upsert(Self.installation("kept", tags: ["x"]))
                try await store.database.close()
            }
            let reopened = try await SQLInstallationStore.open(storage: .sqlite(path: path), logger: Logger.forTest("test"))
            let tags = try await reopened.installation(id: "kept")?.tags
            try await reopened.database.close()
            #expect(tags == ["x"])
        }
    }
}

/// Generated expressions and tag sets: the store's SQL and the in-memory evaluator must always agree.
@Suite struct TagExpressionPropertyTests {
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let vocabulary = ["a", "b", "c", "d", "e", "f"]

    static func randomExpression(depth: Int, using generator: inout SeededGenerator) -> TagExpression {
        if depth == 0 || Int.random(in: 0..<4, using: &generator) == 0 {
            return .tag(vocabulary.randomElement(using: &generator)!)
        }
        switch Int.random(in: 0..<3, using: &generator) {
        case 0: return .not(randomExpression(depth: depth - 1, using: &generator))
        case 1: return .and((0..<Int.random(in: 2...3, using: &generator)).map { _ in randomExpression(depth: depth - 1, using: &generator) })
        default: return .or((0..<Int.random(in: 2...3, using: &generator)).map { _ in randomExpression(depth: depth - 1, using: &generator) })
        }
    }

    @Test func theDrivingTagIsNotTestedTwice() throws {
        func remainder(_ text: String) throws -> String? {
            let expression = try TagExpression(parsing: text)
            return SQLTagQuery.remainder(of: expression, without: SQLTagQuery.drivingTag(expression)).map(\.description)
        }
        #expect(try remainder("user:alice") == nil)
        #expect(try remainder("user:alice && lang:en") == (try TagExpression(parsing: "lang:en")).description)
        #expect(try remainder("a && b && !c") == (try TagExpression(parsing: "b && !c")).description)
        // No single driver, or one inside an operand: the whole expression stays the predicate.
        #expect(try remainder("a || b") == (try TagExpression(parsing: "a || b")).description)
        #expect(try remainder("!a") == (try TagExpression(parsing: "!a")).description)
        #expect(try remainder("(a && b) || (a && c)") == (try TagExpression(parsing: "(a && b) || (a && c)")).description)
        // The SQL of a user's send joins on the tag and tests nothing else of it.
        let plan = SQLTagQuery(query: InstallationQuery(expression: try TagExpression(parsing: "user:alice")), after: 0, limit: 10)
        #expect(!plan.sql.contains("EXISTS"))
        #expect(plan.binds.first == .text("user:alice"))
        // On PostgreSQL each of a large tag's entries looks its installation up through a fence, so that the planner
        // neither merges the tag with the installations from their start nor scans a range of them per entry; the
        // scan is bounded on the entries it reads in order (the prepared page read does the same).
        var partition = InstallationQuery(expression: try TagExpression(parsing: "bench"))
        partition.upTo = InstallationCursor(position: 900)
        let later = SQLTagQuery(query: partition, after: 500, limit: 10, dialect: .postgres)
        #expect(later.sql.contains(SQLTagQuery.drivenFrom(.postgres)) && later.sql.contains("OFFSET 0) i"))
        #expect(later.sql.contains("d.rid > ?") && later.sql.contains("d.rid <= ?") && !later.sql.contains("i.rid >") && !later.sql.contains("i.rid <="))
        #expect(later.binds == [.text("bench"), .integer(500), .integer(900)])
        #expect(PostgresHubDatabase.AddressPage.sql.contains(SQLTagQuery.drivenFrom(.postgres)))
        #expect(SQLTagQuery(query: partition, after: 500, limit: 10).sql.contains("JOIN installations i ON i.rid = d.rid"))
    }

    /// Generated expressions and tag sets: the compiled store query (on every backend) and the evaluator agree.
    @Test(arguments: TestBackend.all, [1, 2, 3, 4] as [UInt64])
    func storeQueryAgreesWithEvaluator(backend: TestBackend, seed: UInt64) async throws {
        try await backend.run { try await Self.checkStoreAgreesWithEvaluator(seed: seed) }
    }

    static func checkStoreAgreesWithEvaluator(seed: UInt64) async throws {
        var generator = SeededGenerator(state: seed)
        try await InstallationStoreTests.withStore() { store in
            var installations: [Installation] = []
            for index in 0..<150 {
                let tags = Self.vocabulary.filter { _ in Bool.random(using: &generator) }
                var installation = InstallationStoreTests.installation("i\(index)", tags: tags)
                if Int.random(in: 0..<5, using: &generator) == 0 {
                    installation.templates = ["t": InstallationTemplate(body: "{}", tags: [Self.vocabulary.randomElement(using: &generator)!])]
                }
                installations.append(try await store.upsert(installation))
            }
            for _ in 0..<60 {
                let expression = Self.randomExpression(depth: 4, using: &generator)
                // Round-trip through text so the parser is covered too.
                let parsed = try TagExpression(parsing: expression.description, limits: .init(maximumTagsOrOnly: 1000, maximumTags: 1000))
                #expect(parsed.matches(["a", "b", "c"]) == expression.matches(["a", "b", "c"]))

                let expected = installations.filter { expression.matches($0.routingTags) }.map(\.installationID)
                var actual: [String] = []
                for try await page in store.pages(InstallationQuery(expression: expression), pageSize: 17) {
                    actual += page.installations.map(\.installationID)
                }
                #expect(actual == expected, "expression \(expression)")
                #expect(try await store.count(InstallationQuery(expression: expression)) == expected.count)

                // Template scope returns a superset that contains every installation some template matches.
                let templateMatches = installations.filter { installation in
                    installation.templates.values.contains { expression.matches(installation.routingTags.union($0.tags)) }
                        || expression.matches(installation.routingTags)
                }.map(\.installationID)
                var candidates: Set<String> = []
                for try await page in store.pages(InstallationQuery(expression: expression, scope: .includingTemplates), pageSize: 50) {
                    candidates.formUnion(page.installations.map(\.installationID))
                }
                #expect(Set(templateMatches).isSubset(of: candidates), "expression \(expression)")
            }
        }
    }
}
