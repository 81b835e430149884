import Foundation
import NIOCore
import NotificationHub
@testable import PushEmulator
import Testing

@testable import APNs

/// The adapter's channel management client and its broadcasts to channel rows, against the emulator.
@Suite struct APNsBroadcastDeliveryTests {
    @Test func channelsAreManagedAtTheManagementListener() async throws {
        try await APNsBroadcastHarness.with { harness in
            try await harness.withAdapter { adapter in
                #expect(adapter.channelEnvironments == ["production"])
                let channel = try await adapter.createChannel(BroadcastChannelOptions(messageStoragePolicy: .mostRecentMessage))
                #expect(channel.environment == "production")
                #expect(harness.emulator.channels().map(\.id) == [channel.id])
                #expect(harness.emulator.channels().first?.messageStoragePolicy == 1)
                let read = try await adapter.channel(id: channel.id, environment: "production")
                #expect(read?.messageStoragePolicy == .mostRecentMessage)
                #expect(try await adapter.channelIDs(environment: "production") == [channel.id])
                #expect(try await adapter.deleteChannel(id: channel.id, environment: "production"))
                #expect(harness.emulator.channels().isEmpty)
                #expect(try await adapter.channel(id: channel.id, environment: "production") == nil)
                #expect(try await adapter.deleteChannel(id: channel.id, environment: "production") == false)
                #expect(harness.emulator.managementRequestCount(in: .production) == 6)
                #expect(harness.emulator.requestCount(in: .production) == 0)
                #expect(harness.emulator.violations.isEmpty)
                do throws(BroadcastChannelError) {
                    _ = try await adapter.createChannel(BroadcastChannelOptions(environment: "sandbox"))
                    Issue.record("a channel was created in an environment the adapter does not serve")
                } catch {
                    #expect(error.code == .unknownEnvironment)
                }
                #expect(harness.emulator.managementRequestCount(in: .production) == 6)
            }
        }
    }

    @Test func withoutAManagementEndpointChannelsAreUnavailable() async throws {
        try await APNsBroadcastHarness.with(management: false) { harness in
            try await harness.withAdapter { adapter in
                #expect(adapter.channelEnvironments.isEmpty)
                do throws(BroadcastChannelError) {
                    _ = try await adapter.createChannel(BroadcastChannelOptions())
                    Issue.record("a channel was created without a management endpoint")
                } catch {
                    #expect(error.code == .unavailable)
                }
            }
        }
    }

    @Test func theChannelLimitIsReportedAsSuch() async throws {
        try await APNsBroadcastHarness.with(maximumChannels: 1) { harness in
            try await harness.withAdapter { adapter in
                _ = try await adapter.createChannel(BroadcastChannelOptions())
                do throws(BroadcastChannelError) {
                    _ = try await adapter.createChannel(BroadcastChannelOptions())
                    Issue.record("a channel beyond the app's limit was created")
                } catch {
                    #expect(error.code == .limitReached)
                    #expect(error.platformReason == "CannotCreateChannelConfig")
                }
                #expect(harness.emulator.channels().count == 1)
            }
        }
    }

    @Test func aChannelRowIsOneBroadcastRequest() async throws {
        try await APNsBroadcastHarness.with { harness in
            try await harness.withAdapter { adapter in
                let channel = harness.emulator.createChannel(bundleID: APNsHarness.topic, messageStoragePolicy: 1)
                let results = await adapter.deliver(
                    [APNsBroadcastHarness.delivery(channelID: channel.id, headers: ["apns-priority": "5", "apns-expiration": "1900000000"])])
                #expect(results == [.success])
                let received = try #require(harness.emulator.broadcasts.first)
                #expect(harness.emulator.broadcastCount == 1)
                #expect(received.channelID == channel.id)
                #expect(received.bundleID == APNsHarness.topic)
                #expect(received.headers["apns-push-type"] == "LiveActivity")
                #expect(received.headers["apns-priority"] == "5")
                #expect(received.headers["apns-expiration"] == "1900000000")
                #expect(received.headers["apns-request-id"] == APNsAdapter.apnsID(notificationID: "n1", deviceToken: channel.id))
                #expect(received.payload == APNsBroadcastHarness.update)
                #expect(harness.emulator.received.isEmpty)
                #expect(harness.emulator.violations.isEmpty)
            }
        }
    }

    @Test func broadcastsAndDevicePushesShareABatch() async throws {
        try await APNsBroadcastHarness.with { harness in
            try await harness.withAdapter { adapter in
                let channel = harness.emulator.createChannel(bundleID: APNsHarness.topic)
                let device = Delivery(
                    notificationID: "n1", installationID: "d1", platform: .apns, pushChannel: .handle(APNsHarness.deviceToken(1)),
                    format: .apple, payload: ByteBuffer(string: #"{"aps":{"alert":"hi"}}"#), headers: [:])
                let results = await adapter.deliver([device, APNsBroadcastHarness.delivery(channelID: channel.id)])
                #expect(results == [.success, .success])
                #expect(harness.emulator.received.map(\.deviceToken) == [APNsHarness.deviceToken(1)])
                #expect(harness.emulator.broadcasts.map(\.channelID) == [channel.id])
                // No apns-expiration given: 0, which a No Message Stored channel requires.
                #expect(harness.emulator.broadcasts.first?.headers["apns-expiration"] == "0")
            }
        }
    }

    @Test func anExpiredProviderTokenIsMintedAgainAndTheBroadcastRetriedOnce() async throws {
        try await APNsBroadcastHarness.with { harness in
            // The adapter's clock runs two minutes behind, so the token it mints after the emulator expired the first
            // one is still in the past for the emulator.
            let clock = ManualWallClock(Date() - 120)
            var settings = harness.settings
            settings.clock = clock
            let adapter = try APNsAdapter(configuration: settings, logger: APNsBroadcastHarness.logger)
            let channel = harness.emulator.createChannel(bundleID: APNsHarness.topic)
            #expect(await adapter.deliver([APNsBroadcastHarness.delivery(channelID: channel.id)]) == [.success])
            harness.emulator.expireProviderTokens(issuedAtOrBefore: clock.now())
            clock.advance(by: 60)
            #expect(await adapter.deliver([APNsBroadcastHarness.delivery(channelID: channel.id)]) == [.success])
            await adapter.shutdown()
            #expect(harness.emulator.broadcastCount == 2)
            #expect(harness.emulator.violations.map { $0.prefix { $0 != ":" } } == ["ExpiredProviderToken"])
        }
    }

    @Test func aDeletedChannelIsAnExpiredChannel() async throws {
        try await APNsBroadcastHarness.with { harness in
            try await harness.withAdapter { adapter in
                let channel = harness.emulator.createChannel(bundleID: APNsHarness.topic)
                harness.emulator.deleteChannel(id: channel.id)
                let result = try #require(await adapter.deliver([APNsBroadcastHarness.delivery(channelID: channel.id)]).first)
                #expect(result.outcome == .expiredChannel)
                #expect(result.reason == "ChannelNotRegistered")
                #expect(result.channelExpiredAt != nil)
                #expect(harness.emulator.broadcastCount == 0)
            }
        }
    }

    @Test func payloadsAChannelCannotCarryAreRefusedWithoutARequest() async throws {
        try await APNsBroadcastHarness.with { harness in
            try await harness.withAdapter { adapter in
                let channel = harness.emulator.createChannel(bundleID: APNsHarness.topic)
                let start = #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}}"#
                let large = #"{"aps":{"event":"end","timestamp":1},"p":"\#(String(repeating: "x", count: 5200))"}"#
                let results = await adapter.deliver([
                    APNsBroadcastHarness.delivery(channelID: channel.id, body: start),
                    APNsBroadcastHarness.delivery(channelID: channel.id, body: large),
                    APNsBroadcastHarness.delivery(channelID: "not base64!"),
                    APNsBroadcastHarness.delivery(channelID: channel.id, headers: ["apns-topic": "com.other"]),
                ])
                #expect(results.map(\.outcome) == [.invalidNotificationFormat, .invalidNotificationSize, .badChannel, .invalidNotificationFormat])
                #expect(harness.emulator.broadcastRequestCount(in: .production) == 0)
            }
        }
    }

    @Test func aChannelOfTheOtherEnvironmentIsFoundThereAndRemembered() async throws {
        try await APNsBroadcastHarness.with(bothEnvironments: true) { harness in
            try await harness.withAdapter { adapter in
                #expect(adapter.channelEnvironments == ["production", "sandbox"])
                // Made elsewhere: the adapter has not seen it, so it tries production first, then sandbox.
                let channel = harness.emulator.createChannel(bundleID: APNsHarness.topic, in: .sandbox)
                #expect(await adapter.deliver([APNsBroadcastHarness.delivery(channelID: channel.id)]) == [.success])
                #expect(harness.emulator.broadcastRequestCount(in: .production) == 1)
                #expect(harness.emulator.broadcastRequestCount(in: .sandbox) == 1)
                #expect(await adapter.deliver([APNsBroadcastHarness.delivery(channelID: channel.id)]) == [.success])
                #expect(harness.emulator.broadcastRequestCount(in: .production) == 1)
                #expect(harness.emulator.broadcastRequestCount(in: .sandbox) == 2)
                // One the adapter created goes straight to its environment.
                let created = try await adapter.createChannel(BroadcastChannelOptions(environment: "sandbox"))
                #expect(created.environment == "sandbox")
                #expect(harness.emulator.managementRequestCount(in: .sandbox) == 1)
                #expect(await adapter.deliver([APNsBroadcastHarness.delivery(channelID: created.id)]) == [.success])
                #expect(harness.emulator.broadcastRequestCount(in: .production) == 1)
                #expect(harness.emulator.broadcastRequestCount(in: .sandbox) == 3)
                // Unknown to both: an expired channel.
                harness.emulator.deleteChannel(id: created.id)
                let result = try #require(await adapter.deliver([APNsBroadcastHarness.delivery(channelID: created.id)]).first)
                #expect(result.outcome == .expiredChannel)
            }
        }
    }

    @Test func liveActivitySendsAreCheckedAtAcceptTime() async throws {
        try await APNsBroadcastHarness.with { harness in
            try await harness.withAdapter { adapter in
                func check(_ body: String, _ headers: NotificationHeaders = [:]) -> String? {
                    do {
                        try adapter.validate(notification: NotificationContent(format: .liveActivity, body: body, headers: headers))
                        return nil
                    } catch {
                        return error.message
                    }
                }
                #expect(check(APNsBroadcastHarness.update) == nil)
                #expect(check(#"{"aps":{"event":"end","timestamp":1}}"#) == nil)
                #expect(check(#"{"aps":{"event":"start","timestamp":1}}"#)?.contains("liveactivitystart") == true)
                #expect(check(#"{"aps":{"event":"update","timestamp":1}}"#)?.contains("content-state") == true)
                #expect(check(#"{"aps":{"event":"update","content-state":{}}}"#)?.contains("timestamp") == true)
                #expect(check(#"{"event":"update"}"#)?.contains("aps") == true)
                #expect(check(APNsBroadcastHarness.update, ["apns-priority": "1"])?.contains("5 or 10") == true)
                #expect(check(APNsBroadcastHarness.update, ["apns-push-type": "alert"])?.contains("liveactivity") == true)
                #expect(check(APNsBroadcastHarness.update, ["apns-topic": "com.other"])?.contains("com.other") == true)
                #expect(check(APNsBroadcastHarness.update, ["apns-topic": APNsHarness.topic + ".push-type.liveactivity"]) == nil)
                do throws(HubError) {
                    try adapter.validate(pushChannel: .handle("AAAA"), platform: .apnsBroadcast)
                    Issue.record("a client could register a channel row")
                } catch {
                    #expect(error.code == .unknownPlatform)
                }
            }
        }
    }
}

/// The emulator's `emulators: apns:` keys for channel management and its admin API for broadcasts.
@Suite struct APNsBroadcastEmulatorSettingsTests {
    @Test func managementListenersAreConfiguredAndServed() async throws {
        let directory = try APNsConfigurationTests.temporaryDirectory()
        let node = ConfigurationNode.parse(
            yaml: "port: 0\nmanagementPort: 0\nmaximumChannelsPerApp: 5\ntopics: [\(APNsHarness.topic)]\n", file: "hub.yaml")
        let made = try APNsEmulatorFactory.makeEmulator(
            configuration: node,
            context: EmulatorContext(directory: directory, tls: APNsHarness.tls, logger: APNsBroadcastHarness.logger))
        #expect(node.problems.isEmpty, "\(node.problems)")
        let emulator = try #require(made as? APNsEmulator)
        #expect(emulator.configuration.maximumChannelsPerApp == 5)
        #expect(emulator.configuration.sandboxManagementPort == nil)
        try await emulator.start()
        #expect(emulator.managementPort(of: .production) != nil)
        #expect(emulator.managementPort(of: .sandbox) == nil)
        await emulator.stop()
    }

    @Test func theAdminAPIListsChannelsAndBroadcasts() async throws {
        try await APNsBroadcastHarness.with { harness in
            try await harness.withAdapter { adapter in
                let channel = harness.emulator.createChannel(bundleID: APNsHarness.topic, messageStoragePolicy: 1)
                #expect(await adapter.deliver([APNsBroadcastHarness.delivery(channelID: channel.id)]) == [.success])
                let (channelsStatus, channels) = harness.emulator.admin(method: "GET", path: "/_emulator/channels", body: nil)
                #expect(channelsStatus == 200)
                let held = try #require(try JSONValue(parsing: channels.readableBytesView).arrayValue)
                #expect(held.compactMap { $0.objectValue?["id"]?.stringValue } == [channel.id])
                let (broadcastsStatus, broadcasts) = harness.emulator.admin(method: "GET", path: "/_emulator/broadcasts", body: nil)
                #expect(broadcastsStatus == 200)
                let list = try #require(try JSONValue(parsing: broadcasts.readableBytesView).arrayValue)
                #expect(list.count == 1)
                #expect(list.first?.objectValue?["channelID"]?.stringValue == channel.id)
                let (_, stats) = harness.emulator.admin(method: "GET", path: "/_emulator/stats", body: nil)
                let object = try #require(try JSONValue(parsing: stats.readableBytesView).objectValue)
                #expect(object["broadcasts"] == .number(1) && object["channels"] == .number(1))
                #expect(harness.emulator.admin(method: "POST", path: "/_emulator/reset", body: nil).0 == 200)
                #expect(harness.emulator.channels().isEmpty && harness.emulator.broadcastCount == 0)
                #expect(harness.emulator.broadcastRequestCount(in: .production) == 0)
            }
        }
    }
}
