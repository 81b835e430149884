import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
@testable import NotificationHub
import Testing

/// Devices that register as their user, with the app's bearer JWT: the hub sets the user, keeps user-bound tags
/// to that user, and keeps other users' installations and registrations out of reach; the Listen-key policy; write
/// limits.
@Suite struct DeviceRegistrationTests {
    static let atom: HTTPFields = [.contentType: "application/atom+xml;type=entry;charset=utf-8"]

    static func run<T: Sendable>(
        listenKey: ListenKeyPolicy = ListenKeyPolicy(), limits: HubLimits = HubLimits(),
        clock: any WallClock = SystemWallClock(), _ body: @Sendable (APITestHarness) async throws -> T
    ) async throws -> T {
        try await APITestHarness.run(
            limits: limits,
            adapters: [RecordingAdapter(limit: 2000), RecordingAdapter(platform: .apns, format: .apple)],
            deviceAuthentication: SecurePushTests.authentication, listenKey: listenKey, clock: clock, body)
    }

    static func token(_ user: String) async throws -> String {
        try await SecurePushTests.token(user: user)
    }

    /// A request with `Authorization: Bearer <token>`.
    static func bearer(
        _ api: APITestHarness, _ method: HTTPRequest.Method, _ path: String, token: String, headers: HTTPFields = [:],
        body: String? = nil
    ) async throws -> TestResponse {
        var headers = headers
        headers[.authorization] = "Bearer \(token)"
        return try await api.request(method, path, key: nil, headers: headers, body: body)
    }

    static func installation(_ id: String, tags: [String] = [], extra: String = "") -> String {
        APITestHarness.installationJSON(id, tags: tags, extra: extra)
    }

    static func appleRegistration(_ handle: String, tags: String = "") -> String {
        RegistrationFixtures.entry(
            "<AppleRegistrationDescription \(RegistrationFixtures.connect)>\(tags.isEmpty ? "" : "<Tags>\(tags)</Tags>")<DeviceToken>\(handle)</DeviceToken></AppleRegistrationDescription>")
    }

    // MARK: A user's own installations

    @Test func aliceRegistersReadsPatchesAndDeletesHerOwnInstallation() async throws {
        try await Self.run { api in
            let alice = try await Self.token("alice")
            let body = Self.installation(
                "alice-phone", tags: ["username:alice", "user:alice", "sports"],
                extra: #","templates":{"t":{"body":"{\"m\":\"$(m)\"}","tags":["username:alice"]}}"#)
            let put = try await Self.bearer(api, .put, "/demo/installations/alice-phone", token: alice, body: body)
            #expect(put.status == .ok, "\(put.text)")
            // The hub sets the user from the token, so $UserId:{alice} is hers.
            #expect(put.json?["userId"] as? String == "alice")
            let stored = try #require(try await api.hub.core.installationStore.installation(id: "alice-phone"))
            #expect(stored.userID == "alice")
            #expect(stored.systemTags.contains("$UserId:{alice}"))

            let read = try await Self.bearer(api, .get, "/demo/installations/alice-phone", token: alice)
            #expect(read.status == .ok && read.json?["pushChannel"] as? String == "dev-alice-phone")

            // Her own userId in the body is accepted too.
            let explicit = try await Self.bearer(
                api, .put, "/demo/installations/alice-phone", token: alice,
                body: Self.installation("alice-phone", tags: ["username:alice"], extra: #","userId":"alice""#))
            #expect(explicit.status == .ok)

            let patch = try await Self.bearer(
                api, .patch, "/demo/installations/alice-phone", token: alice,
                headers: [.contentType: "application/json-patch+json"],
                body: #"[{"op":"add","path":"/tags","value":"news"},{"op":"replace","path":"/pushChannel","value":"dev-2"}]"#)
            #expect(patch.status == .ok, "\(patch.text)")
            #expect(patch.json?["tags"] as? [String] == ["username:alice", "news"])
            // Removing the user in a patch leaves it the token's user.
            let unset = try await Self.bearer(
                api, .patch, "/demo/installations/alice-phone", token: alice, body: #"[{"op":"remove","path":"/userId"}]"#)
            #expect(unset.status == .ok && unset.json?["userId"] as? String == "alice")

            // A send to her user tag reaches the device.
            let send = try await api.request(
                .post, "/demo/messages", key: "send",
                headers: [HTTPField.Name("ServiceBusNotification-Format")!: "testformat", HTTPField.Name("ServiceBusNotification-Tags")!: "$UserId:{alice} && username:alice"],
                body: "hello")
            #expect(send.status == .created)
            let id = try #require(send.headers[HTTPField.Name("TrackingId")!])
            #expect(try await api.waitForFinal(id).summary.count(of: .success) == 1)
            #expect(api.adapter.received.map(\.installationID) == ["alice-phone"])

            #expect(try await Self.bearer(api, .delete, "/demo/installations/alice-phone", token: alice).status == .noContent)
            #expect(try await api.hub.core.installationStore.installation(id: "alice-phone") == nil)
            let gone = try await Self.bearer(api, .get, "/demo/installations/alice-phone", token: alice)
            #expect(gone.status == .notFound && gone.errorCode == "InstallationNotFound")
        }
    }

    @Test func aDifferentUserIdInTheBodyIs403() async throws {
        try await Self.run { api in
            let response = try await Self.bearer(
                api, .put, "/demo/installations/x", token: try await Self.token("alice"),
                body: Self.installation("x", extra: #","userId":"bob""#))
            #expect(response.status == .forbidden)
            #expect(response.errorCode == "UserMismatch")
            #expect(response.errorMessage?.contains("leave userId out") == true)
            #expect(try await api.hub.core.installationStore.installation(id: "x") == nil)
        }
    }

    @Test(arguments: [
        (["username:alice"], "tag 'username:alice' names another user"),
        (["user:alice"], "tag 'user:alice' names another user"),
        (["UserName:alice"], "tag 'UserName:alice' names another user"),
        (["username:bob", "username:bobby"], "tag 'username:bobby' names another user"),
        (["username:"], "tag 'username:' names another user"),
    ])
    func bobsTokenCannotRegisterAnotherUsersTags(tags: [String], message: String) async throws {
        try await Self.run { api in
            let response = try await Self.bearer(
                api, .put, "/demo/installations/bob-phone", token: try await Self.token("bob"),
                body: Self.installation("bob-phone", tags: tags))
            #expect(response.status == .forbidden)
            #expect(response.errorCode == "UserMismatch")
            #expect(response.errorMessage?.contains(message) == true, "\(response.errorMessage ?? "")")
            #expect(response.errorMessage?.contains("'username:bob'") == true)
            #expect(try await api.hub.core.installationStore.installation(id: "bob-phone") == nil)
        }
    }

    @Test func templateTagsAreCheckedToo() async throws {
        try await Self.run { api in
            let response = try await Self.bearer(
                api, .put, "/demo/installations/bob-phone", token: try await Self.token("bob"),
                body: Self.installation(
                    "bob-phone", tags: ["username:bob"],
                    extra: #","templates":{"t":{"body":"{\"m\":\"$(m)\"}","tags":["user:alice"]}}"#))
            #expect(response.status == .forbidden && response.errorCode == "UserMismatch")
        }
    }

    @Test func aPatchCannotAddAnotherUsersTagOrUser() async throws {
        try await Self.run { api in
            let bob = try await Self.token("bob")
            #expect(
                try await Self.bearer(
                    api, .put, "/demo/installations/bob-phone", token: bob, body: Self.installation("bob-phone", tags: ["username:bob"])
                ).status == .ok)
            for operations in [
                #"[{"op":"add","path":"/tags","value":"username:alice"}]"#,
                #"[{"op":"add","path":"/tags","value":["news","user:alice"]}]"#,
                #"[{"op":"add","path":"/templates/t","value":{"body":"{}","tags":["username:alice"]}}]"#,
                #"[{"op":"replace","path":"/userId","value":"alice"}]"#,
            ] {
                let response = try await Self.bearer(api, .patch, "/demo/installations/bob-phone", token: bob, body: operations)
                #expect(response.status == .forbidden, "\(operations)")
                #expect(response.errorCode == "UserMismatch", "\(operations)")
            }
            let stored = try #require(try await api.hub.core.installationStore.installation(id: "bob-phone"))
            #expect(stored.tags == ["username:bob"] && stored.userID == "bob" && stored.templates.isEmpty)
        }
    }

    // MARK: Another user's installation

    @Test func bobCannotTakeOverReadPatchOrDeleteAlicesInstallation() async throws {
        try await Self.run { api in
            let alice = try await Self.token("alice")
            let bob = try await Self.token("bob")
            #expect(
                try await Self.bearer(
                    api, .put, "/demo/installations/alice-phone", token: alice,
                    body: Self.installation("alice-phone", tags: ["username:alice"])
                ).status == .ok)

            // Take-over: refused, nothing changes.
            let takeover = try await Self.bearer(
                api, .put, "/demo/installations/alice-phone", token: bob,
                body: Self.installation("alice-phone", tags: ["username:bob"], extra: #","pushChannel":"dev-bob""#))
            #expect(takeover.status == .conflict)
            #expect(takeover.errorMessage?.contains("belongs to another user") == true)
            #expect(takeover.errorMessage?.contains("new installationId") == true)

            // Read, patch and delete: answered exactly as for an installation that does not exist.
            let read = try await Self.bearer(api, .get, "/demo/installations/alice-phone", token: bob)
            let readMissing = try await Self.bearer(api, .get, "/demo/installations/alice-phon", token: bob)
            #expect(read.status == .notFound && read.status == readMissing.status)
            #expect(read.errorCode == readMissing.errorCode)
            #expect(read.text == readMissing.text.replacingOccurrences(of: "alice-phon'", with: "alice-phone'"))
            let patch = try await Self.bearer(
                api, .patch, "/demo/installations/alice-phone", token: bob, body: #"[{"op":"add","path":"/tags","value":"x"}]"#)
            let patchMissing = try await Self.bearer(
                api, .patch, "/demo/installations/alice-phon", token: bob, body: #"[{"op":"add","path":"/tags","value":"x"}]"#)
            #expect(patch.status == .notFound && patch.errorCode == patchMissing.errorCode)
            #expect(patch.text == patchMissing.text.replacingOccurrences(of: "alice-phon'", with: "alice-phone'"))
            let delete = try await Self.bearer(api, .delete, "/demo/installations/alice-phone", token: bob)
            let deleteMissing = try await Self.bearer(api, .delete, "/demo/installations/alice-phon", token: bob)
            #expect(delete.status == .noContent && deleteMissing.status == .noContent && delete.text == deleteMissing.text)

            let stored = try #require(try await api.hub.core.installationStore.installation(id: "alice-phone"))
            #expect(stored.userID == "alice" && stored.pushChannel == .handle("dev-alice-phone") && stored.tags == ["username:alice"])
            #expect(try await Self.bearer(api, .get, "/demo/installations/alice-phone", token: alice).status == .ok)

            // A backend's Manage key still reaches every installation.
            #expect(try await api.request(.get, "/demo/installations/alice-phone", key: "manage").status == .ok)
        }
    }

    @Test func aUsersTokenClaimsAnInstallationOfNoUser() async throws {
        try await Self.run { api in
            // Registered earlier with the Listen key, without a user: the app now registers as its user.
            #expect(try await api.request(.put, "/demo/installations/tablet", key: "listen", body: Self.installation("tablet")).status == .ok)
            let alice = try await Self.token("alice")
            #expect(try await Self.bearer(api, .get, "/demo/installations/tablet", token: alice).status == .ok)
            let claimed = try await Self.bearer(
                api, .put, "/demo/installations/tablet", token: alice, body: Self.installation("tablet", tags: ["username:alice"]))
            #expect(claimed.status == .ok && claimed.json?["userId"] as? String == "alice")
            let bob = try await Self.token("bob")
            #expect(try await Self.bearer(api, .get, "/demo/installations/tablet", token: bob).status == .notFound)
        }
    }

    // MARK: The Listen key's policy

    @Test func theListenKeyMayBindUsersByDefault() async throws {
        try await Self.run { api in
            let response = try await api.request(
                .put, "/demo/installations/i1", key: "listen",
                body: Self.installation("i1", tags: ["username:alice"], extra: #","userId":"alice""#))
            #expect(response.status == .ok)
            // And, as in Azure, it reaches every installation.
            let alice = try await Self.token("alice")
            #expect(
                try await Self.bearer(api, .put, "/demo/installations/a2", token: alice, body: Self.installation("a2")).status == .ok)
            #expect(try await api.request(.get, "/demo/installations/a2", key: "listen").status == .ok)
            #expect(
                try await api.request(
                    .patch, "/demo/installations/a2", key: "listen", body: #"[{"op":"replace","path":"/pushChannel","value":"dev-x"}]"#
                ).status == .ok)
        }
    }

    @Test func withDenyTheListenKeyRegistersNoUserBoundTagAndReachesNoUsersInstallation() async throws {
        try await Self.run(listenKey: ListenKeyPolicy(userBoundTags: .deny)) { api in
            for (body, fragment) in [
                (Self.installation("i1", tags: ["news", "username:alice"]), "tag 'username:alice' names a user"),
                (Self.installation("i1", tags: ["USER:alice"]), "tag 'USER:alice' names a user"),
                (Self.installation("i1", extra: #","userId":"alice""#), "userId binds the installation to a user"),
            ] {
                let response = try await api.request(.put, "/demo/installations/i1", key: "listen", body: body)
                #expect(response.status == .forbidden, "\(body)")
                #expect(response.errorCode == "UserTokenRequired", "\(body)")
                #expect(response.errorMessage?.contains(fragment) == true, "\(response.errorMessage ?? "")")
                #expect(response.errorMessage?.contains("register the device with the user's token") == true
                    || response.errorMessage?.contains("register with the user's token") == true)
            }
            #expect(try await api.hub.core.installationStore.installation(id: "i1") == nil)

            // Devices of no user register as before; a patch cannot add a user-bound tag.
            #expect(try await api.request(.put, "/demo/installations/i1", key: "listen", body: Self.installation("i1", tags: ["news"])).status == .ok)
            let patch = try await api.request(
                .patch, "/demo/installations/i1", key: "listen", body: #"[{"op":"add","path":"/tags","value":"username:alice"}]"#)
            #expect(patch.status == .forbidden && patch.errorCode == "UserTokenRequired")

            // Alice's installation is out of the Listen key's reach: no hijack of its channel, no read, no delete.
            let alice = try await Self.token("alice")
            #expect(
                try await Self.bearer(
                    api, .put, "/demo/installations/alice-phone", token: alice, body: Self.installation("alice-phone", tags: ["username:alice"])
                ).status == .ok)
            let hijack = try await api.request(
                .patch, "/demo/installations/alice-phone", key: "listen", body: #"[{"op":"replace","path":"/pushChannel","value":"dev-evil"}]"#)
            #expect(hijack.status == .notFound)
            let overwrite = try await api.request(
                .put, "/demo/installations/alice-phone", key: "listen", body: Self.installation("alice-phone", extra: #","pushChannel":"dev-evil""#))
            #expect(overwrite.status == .conflict && overwrite.errorMessage?.contains("that user's token") == true)
            #expect(try await api.request(.get, "/demo/installations/alice-phone", key: "listen").status == .notFound)
            #expect(try await api.request(.delete, "/demo/installations/alice-phone", key: "listen").status == .noContent)
            let stored = try #require(try await api.hub.core.installationStore.installation(id: "alice-phone"))
            #expect(stored.pushChannel == .handle("dev-alice-phone") && stored.userID == "alice")

            // A backend with Manage is not bound by the Listen key's policy.
            #expect(
                try await api.request(
                    .put, "/demo/installations/i2", key: "manage",
                    body: Self.installation("i2", tags: ["username:carol"], extra: #","userId":"carol""#)
                ).status == .ok)
        }
    }

    // MARK: Tokens

    @Test func badTokensAreRefusedOnTheDeviceRoutesAsOnSecurePushReads() async throws {
        try await Self.run { api in
            let header = SecurePushTests.base64URL(#"{"alg":"none","typ":"JWT"}"#)
            let claims = SecurePushTests.base64URL(
                #"{"sub":"alice","iss":"https://id.example.com","aud":"hub","exp":\#(Int(Date().timeIntervalSince1970) + 600)}"#)
            let tokens: [(String, String)] = [
                ("expired", try await SecurePushTests.token(user: "alice", expiry: Date() - 60)),
                ("wrong audience", try await SecurePushTests.token(user: "alice", audience: "other")),
                ("wrong issuer", try await SecurePushTests.token(user: "alice", issuer: "https://evil.example.com")),
                ("wrong secret", try await SecurePushTests.token(user: "alice", hmacSecret: "another-secret-that-is-32-bytes-long!!")),
                ("alg none", "\(header).\(claims)."),
                ("garbage", "not-a-jwt"),
            ]
            let routes: [(HTTPRequest.Method, String, HTTPFields, String?)] = [
                (.put, "/demo/installations/a", [:], Self.installation("a", tags: ["username:alice"])),
                (.patch, "/demo/installations/a", [:], #"[{"op":"add","path":"/tags","value":"x"}]"#),
                (.get, "/demo/installations/a", [:], nil),
                (.delete, "/demo/installations/a", [:], nil),
                (.post, "/demo/registrationIDs", [:], nil),
                (.post, "/demo/registrations", Self.atom, Self.appleRegistration("dev-1")),
                (.put, "/demo/registrations/r1", Self.atom, Self.appleRegistration("dev-1")),
                (.get, "/demo/registrations/r1", [:], nil),
                (.delete, "/demo/registrations/r1", [:], nil),
                (.get, "/demo/registrations?$filter=ChannelUri%20eq%20'dev-1'", [:], nil),
                (.get, "/demo/securenotifications/x", [:], nil),
            ]
            for (name, token) in tokens {
                for (method, path, headers, body) in routes {
                    let response = try await Self.bearer(api, method, path, token: token, headers: headers, body: body)
                    #expect(response.status == .unauthorized, "\(name): \(method) \(path)")
                    #expect(response.errorCode == "InvalidToken", "\(name): \(method) \(path)")
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(name): \(method) \(path)")
                }
            }
            #expect(try await api.hub.core.installationStore.count(InstallationQuery()) == 0)
        }
    }

    @Test func aUsersTokenOpensOnlyTheDeviceRoutes() async throws {
        try await Self.run { api in
            let alice = try await Self.token("alice")
            for (method, path) in [
                (HTTPRequest.Method.get, "/demo/installations"), (.post, "/demo/messages"), (.get, "/demo/registrations"),
                (.get, "/demo/tags/news/registrations"), (.get, "/demo/description"),
            ] {
                let response = try await Self.bearer(api, method, path, token: alice, body: "{}")
                #expect(response.status == .forbidden, "\(method) \(path)")
                #expect(response.errorMessage?.contains("not a device user's token") == true, "\(method) \(path)")
            }
        }
    }

    // MARK: Registrations

    @Test func registrationsBelongToTheUserWhoseTokenWroteThem() async throws {
        try await Self.run { api in
            let alice = try await Self.token("alice")
            let bob = try await Self.token("bob")
            let created = try await Self.bearer(
                api, .post, "/demo/registrations", token: alice, headers: Self.atom,
                body: Self.appleRegistration("dev-a1", tags: "username:alice,news"))
            #expect(created.status == .ok, "\(created.text)")
            let id = try RegistrationXML.azure.parseEntry(Array(created.body.readableBytesView)).registration.registrationID
            #expect(try await api.hub.core.installationStore.registration(id: id)?.userID == "alice")

            // Bob: no user-bound tag of alice's, no read, no overwrite, no delete.
            let foreignTag = try await Self.bearer(
                api, .post, "/demo/registrations", token: bob, headers: Self.atom, body: Self.appleRegistration("dev-b1", tags: "username:alice"))
            #expect(foreignTag.status == .forbidden && foreignTag.errorCode == "UserMismatch")
            let read = try await Self.bearer(api, .get, "/demo/registrations/\(id)", token: bob)
            #expect(read.status == .notFound && read.errorCode == "RegistrationNotFound")
            let overwrite = try await Self.bearer(
                api, .put, "/demo/registrations/\(id)", token: bob, headers: Self.atom, body: Self.appleRegistration("dev-b1", tags: "username:bob"))
            #expect(overwrite.status == .conflict && overwrite.errorMessage?.contains("another user") == true)
            let delete = try await Self.bearer(api, .delete, "/demo/registrations/\(id)", token: bob)
            let deleteMissing = try await Self.bearer(api, .delete, "/demo/registrations/1234-5678-9", token: bob)
            #expect(delete.status == .notFound && delete.errorCode == deleteMissing.errorCode)

            // Listings by handle show each user only their own (and registrations of no user).
            let filter = "/demo/registrations?$filter=DeviceToken%20eq%20'dev-a1'"
            #expect(try await Self.bearer(api, .get, filter, token: alice).text.contains(id))
            let bobsListing = try await Self.bearer(api, .get, filter, token: bob)
            #expect(bobsListing.status == .ok && !bobsListing.text.contains(id))

            // Bob's own registration under his token; a backend's write keeps alice's owner.
            let bobs = try await Self.bearer(
                api, .put, "/demo/registrations/bob-reg", token: bob, headers: Self.atom, body: Self.appleRegistration("dev-b1", tags: "user:bob"))
            #expect(bobs.status == .ok)
            #expect(
                try await api.request(
                    .put, "/demo/registrations/\(id)", key: "manage", headers: Self.atom, body: Self.appleRegistration("dev-a2", tags: "news")
                ).status == .ok)
            #expect(try await Self.bearer(api, .get, "/demo/registrations/\(id)", token: bob).status == .notFound)

            // Alice reads and deletes hers.
            let mine = try await Self.bearer(api, .get, "/demo/registrations/\(id)", token: alice)
            #expect(mine.status == .ok && mine.text.contains("dev-a2"))
            #expect(try await Self.bearer(api, .delete, "/demo/registrations/\(id)", token: alice).status == .ok)
            #expect(try await api.hub.core.installationStore.registration(id: id) == nil)

            // A registration id from /registrationIDs works with a user's token.
            let issued = try await Self.bearer(api, .post, "/demo/registrationIDs", token: alice)
            #expect(issued.status == .created)
        }
    }

    @Test func anotherUsersInstallationProjectsNothingToThisUser() async throws {
        try await Self.run { api in
            let alice = try await Self.token("alice")
            let body = #"{"installationId":"alice-ios","platform":"apns","pushChannel":"dev-ios","tags":["username:alice"]}"#
            #expect(try await Self.bearer(api, .put, "/demo/installations/alice-ios", token: alice, body: body).status == .ok)
            let projection = RegistrationID.projection(installationID: "alice-ios")
            #expect(try await Self.bearer(api, .get, "/demo/registrations/\(projection)", token: alice).status == .ok)
            let bob = try await Self.token("bob")
            let read = try await Self.bearer(api, .get, "/demo/registrations/\(projection)", token: bob)
            #expect(read.status == .notFound && read.errorCode == "RegistrationNotFound")
            #expect(try await Self.bearer(api, .delete, "/demo/registrations/\(projection)", token: bob).status == .notFound)
        }
    }

    @Test func withDenyTheListenKeyRegistersNoUserBoundTagAsARegistration() async throws {
        try await Self.run(listenKey: ListenKeyPolicy(userBoundTags: .deny)) { api in
            let refused = try await api.request(
                .post, "/demo/registrations", key: "listen", headers: Self.atom, body: Self.appleRegistration("dev-1", tags: "username:alice"))
            #expect(refused.status == .forbidden && refused.errorCode == "UserTokenRequired")
            #expect(refused.errorMessage?.contains("user's token") == true)
            let plain = try await api.request(
                .post, "/demo/registrations", key: "listen", headers: Self.atom, body: Self.appleRegistration("dev-1", tags: "news"))
            #expect(plain.status == .ok)
            // A registration a user's token wrote is out of the Listen key's reach.
            let alice = try await Self.token("alice")
            #expect(
                try await Self.bearer(
                    api, .put, "/demo/registrations/alice-reg", token: alice, headers: Self.atom, body: Self.appleRegistration("dev-2", tags: "username:alice")
                ).status == .ok)
            #expect(try await api.request(.get, "/demo/registrations/alice-reg", key: "listen").status == .notFound)
            let overwrite = try await api.request(
                .put, "/demo/registrations/alice-reg", key: "listen", headers: Self.atom, body: Self.appleRegistration("dev-3"))
            #expect(overwrite.status == .conflict)
        }
    }

    // MARK: Write limits

    @Test func writesPerUserAreLimitedWithRetryAfter() async throws {
        let clock = ManualWallClock(Date())
        let limits = HubLimits(
            installationWrites: InstallationWriteLimits(perUser: .init(perMinute: 6, burst: 3), perKey: nil))
        try await Self.run(limits: limits, clock: clock) { api in
            let alice = try await Self.token("alice")
            let bob = try await Self.token("bob")
            for index in 0..<3 {
                let response = try await Self.bearer(api, .put, "/demo/installations/a\(index)", token: alice, body: Self.installation("a\(index)"))
                #expect(response.status == .ok)
            }
            // Reads are not writes.
            #expect(try await Self.bearer(api, .get, "/demo/installations/a0", token: alice).status == .ok)
            for (method, body) in [(HTTPRequest.Method.put, Self.installation("a3")), (.patch, "[]"), (.delete, nil)] {
                let limited = try await Self.bearer(api, method, "/demo/installations/a3", token: alice, body: body)
                #expect(limited.status == .tooManyRequests, "\(method)")
                #expect(limited.errorCode == "TooManyRequests")
                #expect(limited.headers[.retryAfter] == "10", "one write every 10 seconds at 6 a minute")
                #expect(limited.errorMessage?.contains("limits.installationWrites.perUser") == true)
            }
            // The same limit covers registrations.
            let registration = try await Self.bearer(
                api, .post, "/demo/registrations", token: alice, headers: Self.atom, body: Self.appleRegistration("dev-9"))
            #expect(registration.status == .tooManyRequests)
            // Bob has his own bucket; keys are not limited here.
            #expect(try await Self.bearer(api, .put, "/demo/installations/b0", token: bob, body: Self.installation("b0")).status == .ok)
            #expect(try await api.request(.put, "/demo/installations/k0", key: "listen", body: Self.installation("k0")).status == .ok)

            clock.advance(by: 10)
            #expect(try await Self.bearer(api, .put, "/demo/installations/a3", token: alice, body: Self.installation("a3")).status == .ok)
            #expect(try await Self.bearer(api, .put, "/demo/installations/a4", token: alice, body: Self.installation("a4")).status == .tooManyRequests)
            #expect(try await api.hub.core.installationStore.installation(id: "a4") == nil)
        }
    }

    @Test func writesPerKeyWithoutManageAreLimited() async throws {
        let clock = ManualWallClock(Date())
        let limits = HubLimits(installationWrites: InstallationWriteLimits(perUser: nil, perKey: .init(perMinute: 60, burst: 2)))
        try await Self.run(limits: limits, clock: clock) { api in
            for index in 0..<2 {
                #expect(try await api.request(.put, "/demo/installations/l\(index)", key: "listen", body: Self.installation("l\(index)")).status == .ok)
            }
            let limited = try await api.request(.put, "/demo/installations/l2", key: "listen", body: Self.installation("l2"))
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] == "1")
            #expect(limited.errorMessage?.contains("key 'listen'") == true)
            // Backends with Manage are never limited.
            for index in 0..<5 {
                #expect(try await api.request(.put, "/demo/installations/m\(index)", key: "manage", body: Self.installation("m\(index)")).status == .ok)
            }
            clock.advance(by: 1)
            #expect(try await api.request(.put, "/demo/installations/l2", key: "listen", body: Self.installation("l2")).status == .ok)
        }
    }

    // MARK: Secure push

    @Test func everyUserBoundNamespaceNamesTheReaderOfASecureNotification() async throws {
        try await APITestHarness.run(
            adapters: SecurePushTests.adapters, deviceAuthentication: SecurePushTests.authentication,
            securePush: SecurePushTests.settings()
        ) { api in
            let created = try await api.request(
                .post, "/demo/securenotifications", key: "send", body: #"{"payload":{"a":1},"tags":"user:alice"}"#)
            let id = try #require(created.json?["id"] as? String)
            let alice = try await Self.bearer(api, .get, "/demo/securenotifications/\(id)", token: try await Self.token("alice"))
            #expect(alice.status == .ok)
            let bob = try await Self.bearer(api, .get, "/demo/securenotifications/\(id)", token: try await Self.token("bob"))
            #expect(bob.status == .notFound)
        }
    }
}
