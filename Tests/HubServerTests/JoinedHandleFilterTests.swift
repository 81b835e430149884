@testable import HubServer
import NotificationHub
import Testing

/// `$filter` on a handle joined from several elements: every element given, joined by the format's separator.
@Suite struct JoinedHandleFilterTests {
    static let format = RegistrationFormat(
        platform: Platform("kite"), prefix: "Kite", channel: .joined(["KiteUser", "KiteLine"], separator: "-"))

    @Test func allElementsGivenInAnyOrderMatchTheJoinedHandle() throws {
        let query = try RegistrationsController.registrationQuery(
            filter: "KiteLine eq 'line-9' and KiteUser eq 'u1'", formats: [Self.format])
        #expect(query == .channel(handles: ["u1-line-9"], platforms: [Platform("kite")]))
    }

    @Test func aLiteralThatCouldNotHaveBeenRegisteredMatchesNothing() throws {
        let query = try RegistrationsController.registrationQuery(
            filter: "KiteUser eq 'u-1' and KiteLine eq 'l'", formats: [Self.format])
        #expect(query == .channel(handles: [], platforms: [Platform("kite")]))
    }

    @Test func oneElementAloneIsRefusedNamingTheWholeFilter() {
        #expect {
            _ = try RegistrationsController.registrationQuery(filter: "KiteUser eq 'u1'", formats: [Self.format])
        } throws: { error in
            "\(error)".contains("KiteUser eq '…' and KiteLine eq '…'")
        }
    }
}
