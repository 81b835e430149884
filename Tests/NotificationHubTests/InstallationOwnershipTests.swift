import Foundation
import HubTestSupport
@testable import NotificationHub
import Testing

/// Who may write, read and delete which rows: the store decides inside its write, on both backends, so a user's
/// installation or registration cannot be taken over, even by a concurrent write.
@Suite struct InstallationOwnershipTests {
    static func installation(_ id: String, user: String?, handle: String? = nil) -> Installation {
        Installation(
            installationID: id, userID: user, platform: Platform("test"), pushChannel: .handle(handle ?? "dev-\(id)"),
            tags: ["news"])
    }

    static func registration(_ id: String, tags: [String] = ["news"], handle: String? = nil) -> Registration {
        Registration(registrationID: id, platform: Platform("test"), pushChannel: .handle(handle ?? "dev-\(id)"), tags: tags)
    }

    static func isConflict(_ error: any Error) -> Bool { (error as? HubError)?.code == .conflict }

    @Test(arguments: TestBackend.all)
    func aUsersInstallationIsOutOfOtherUsersReach(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store async throws in
                _ = try await store.upsert(Self.installation("phone", user: "alice"), as: .user("alice"))
                // Bob cannot replace, patch or delete it; the Listen key under `deny` cannot either.
                await #expect {
                    try await store.upsert(Self.installation("phone", user: "bob", handle: "dev-bob"), as: .user("bob"))
                } throws: {
                    Self.isConflict($0) && "\($0)".contains("belongs to another user")
                }
                await #expect {
                    try await store.upsert(Self.installation("phone", user: nil, handle: "dev-x"), as: .listenKey)
                } throws: {
                    Self.isConflict($0) && "\($0)".contains("that user's token")
                }
                await #expect {
                    try await store.update(id: "phone", as: .user("bob")) { $0.tags = ["x"] }
                } throws: {
                    ($0 as? HubError)?.code == .notFound
                }
                await #expect {
                    try await store.update(id: "phone", as: .listenKey) { $0.tags = ["x"] }
                } throws: {
                    ($0 as? HubError)?.code == .notFound
                }
                #expect(try await store.delete(id: "phone", as: .user("bob")) == false)
                #expect(try await store.delete(id: "phone", as: .listenKey) == false)
                let kept = try #require(try await store.installation(id: "phone"))
                #expect(kept.userID == "alice" && kept.pushChannel == .handle("dev-phone") && kept.tags == ["news"])

                // Alice can do all of it; so can an unrestricted writer (a backend's Manage key).
                let patched = try await store.update(id: "phone", as: .user("alice")) { $0.tags = ["sports"] }
                #expect(patched.tags == ["sports"] && patched.userID == "alice")
                _ = try await store.upsert(Self.installation("phone", user: "alice", handle: "dev-new"), as: .user("alice"))
                #expect(try await store.installation(id: "phone")?.pushChannel == .handle("dev-new"))
                #expect(try await store.delete(id: "phone", as: .user("alice")))
                _ = try await store.upsert(Self.installation("phone", user: "alice"), as: .user("alice"))
                _ = try await store.upsert(Self.installation("phone", user: "carol"), as: .unrestricted)
                #expect(try await store.installation(id: "phone")?.userID == "carol")
                #expect(try await store.delete(id: "phone", as: .unrestricted))
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func anInstallationOfNoUserIsClaimedByTheFirstUserWhoWritesIt(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store async throws in
                _ = try await store.upsert(Self.installation("tablet", user: nil), as: .listenKey)
                _ = try await store.upsert(Self.installation("tablet", user: nil, handle: "dev-2"), as: .listenKey)
                let claimed = try await store.update(id: "tablet", as: .user("alice")) { $0.userID = "alice" }
                #expect(claimed.userID == "alice")
                await #expect {
                    try await store.upsert(Self.installation("tablet", user: "bob"), as: .user("bob"))
                } throws: {
                    Self.isConflict($0)
                }
                #expect(try await store.installation(id: "tablet")?.userID == "alice")
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func theStoreRefusesAGuardedWriteThatNamesAnotherUser(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store async throws in
                await #expect {
                    try await store.upsert(Self.installation("a", user: "bob"), as: .user("alice"))
                } throws: {
                    ($0 as? HubError)?.code == .userMismatch
                }
                await #expect {
                    try await store.upsert(Self.installation("a", user: "bob"), as: .listenKey)
                } throws: {
                    ($0 as? HubError)?.code == .userTokenRequired
                }
                #expect(try await store.installation(id: "a") == nil)
            }
        }
    }

    /// Many concurrent writes of one new id by two users (combined into shared transactions by the store's group
    /// commit, or racing on PostgreSQL connections): at most one user ever owns it, and every write the other
    /// user was told succeeded is one that really happened before the winner took it (none, here: nobody owned it
    /// before).
    @Test(arguments: TestBackend.all)
    func concurrentClaimsOfOneIDLetOneUserWin(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store async throws in
                for round in 0..<5 {
                    let id = "contested-\(round)"
                    let results = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                        for attempt in 0..<24 {
                            let user = attempt % 2 == 0 ? "alice" : "bob"
                            group.addTask {
                                do {
                                    _ = try await store.upsert(
                                        Self.installation(id, user: user, handle: "dev-\(user)"), as: .user(user))
                                    return (user, true)
                                } catch let error as HubError where error.code == .conflict {
                                    return (user, false)
                                }
                            }
                        }
                        var results: [(String, Bool)] = []
                        for try await result in group { results.append(result) }
                        return results
                    }
                    let winners = Set(results.filter(\.1).map(\.0))
                    #expect(winners.count == 1, "round \(round): \(winners)")
                    let stored = try #require(try await store.installation(id: id))
                    #expect(winners == [stored.userID ?? ""])
                    #expect(stored.pushChannel == .handle("dev-\(stored.userID ?? "")"))
                }
            }
        }
    }

    /// The group commit must not merge two writes of one id when one is guarded: the last would win for both, and
    /// a user would be told their write succeeded while another user's took the row. Such a batch is refused, so
    /// the combiner writes its items one by one, in order.
    @Test(arguments: TestBackend.all)
    func aBatchWithAGuardedWriteOfARepeatedIDIsWrittenOneByOne(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store async throws in
                let alice = SQLInstallationStore.GuardedWrite(installation: Self.installation("x", user: "alice"), guarded: true)
                let bob = SQLInstallationStore.GuardedWrite(installation: Self.installation("x", user: "bob"), guarded: true)
                let backend = SQLInstallationStore.GuardedWrite(installation: Self.installation("x", user: nil), guarded: false)
                for batch in [[alice, bob], [backend, alice], [alice, backend]] {
                    await #expect {
                        try await store.database.transaction { try await SQLInstallationStore.write(batch, on: $0) }
                    } throws: { Self.isConflict($0) && "\($0)".contains("written twice in one batch") }
                }
                #expect(try await store.installation(id: "x") == nil)
                // Unguarded writes of one id still combine: the last wins, as if they ran in order.
                let first = SQLInstallationStore.GuardedWrite(installation: Self.installation("y", user: "alice"), guarded: false)
                let last = SQLInstallationStore.GuardedWrite(installation: Self.installation("y", user: "bob"), guarded: false)
                try await store.database.transaction { try await SQLInstallationStore.write([first, last], on: $0) }
                #expect(try await store.installation(id: "y")?.userID == "bob")
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func registrationsBelongToTheUserWhoWroteThem(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store async throws in
                let created = try await store.putRegistration(Self.registration("r1"), condition: .unconditional, as: .user("alice"))
                #expect(created.userID == "alice")
                #expect(try await store.registration(id: "r1")?.userID == "alice")
                await #expect {
                    try await store.putRegistration(Self.registration("r1", handle: "dev-bob"), condition: .unconditional, as: .user("bob"))
                } throws: { Self.isConflict($0) && "\($0)".contains("another user") }
                await #expect {
                    try await store.putRegistration(Self.registration("r1"), condition: .equals(1), as: .listenKey)
                } throws: { Self.isConflict($0) }
                #expect(try await store.deleteRegistration(id: "r1", condition: .unconditional, as: .user("bob")) == false)
                #expect(try await store.deleteRegistration(id: "r1", condition: .unconditional, as: .listenKey) == false)

                // A backend's write keeps the owner (registrations carry no user of their own).
                let replaced = try await store.putRegistration(
                    Self.registration("r1", tags: ["sports"]), condition: .equals(1), as: .unrestricted)
                #expect(replaced.userID == "alice" && replaced.etag == 2)
                // Owners do not become routing tags: registrations have no system tags.
                #expect(try await store.count(InstallationQuery(expression: .tag(SystemTag.userID("alice")))) == 0)

                // Listings by handle leave out what the registrant does not reach.
                _ = try await store.putRegistration(Self.registration("r2", handle: "dev-r1"), condition: .unconditional, as: .user("bob"))
                _ = try await store.putRegistration(Self.registration("r3", handle: "dev-r1"), condition: .unconditional, as: .listenKey)
                var apple = Self.installation("i1", user: "alice", handle: "dev-r1")
                apple.platform = .apns  // a platform with a registration format, so the installation projects one
                _ = try await store.upsert(apple, as: .user("alice"))
                let query = RegistrationQuery.channel(handles: ["dev-r1"], platforms: nil)
                func ids(_ registrant: Registrant) async throws -> [String] {
                    try await store.registrations(query, after: nil, limit: 100, reachableBy: registrant).registrations.map(\.registrationID)
                }
                let projection = RegistrationID.projection(installationID: "i1")
                #expect(try await ids(.unrestricted) == ["r1", "r2", "r3", projection])
                #expect(try await ids(.user("alice")) == ["r1", "r3", projection])
                #expect(try await ids(.user("bob")) == ["r2", "r3"])
                #expect(try await ids(.listenKey) == ["r3"])

                #expect(try await store.deleteRegistration(id: "r1", condition: .equals(2), as: .user("alice")))
                #expect(try await store.registration(id: "r1") == nil)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func concurrentRegistrationClaimsLetOneUserWin(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store async throws in
                let results = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                    for attempt in 0..<16 {
                        let user = attempt % 2 == 0 ? "alice" : "bob"
                        group.addTask {
                            do {
                                _ = try await store.putRegistration(
                                    Self.registration("contested", handle: "dev-\(user)"), condition: .unconditional,
                                    as: .user(user))
                                return (user, true)
                            } catch let error as HubError where error.code == .conflict {
                                return (user, false)
                            }
                        }
                    }
                    var results: [(String, Bool)] = []
                    for try await result in group { results.append(result) }
                    return results
                }
                let winners = Set(results.filter(\.1).map(\.0))
                #expect(winners.count == 1)
                let stored = try #require(try await store.registration(id: "contested"))
                #expect(winners == [stored.userID ?? ""])
                #expect(stored.pushChannel == .handle("dev-\(stored.userID ?? "")"))
            }
        }
    }
}
