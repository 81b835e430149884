import Foundation

/// Which installations a query selects.
public struct InstallationQuery: Sendable, Hashable {
    /// Which tags an expression is matched against.
    public enum TagScope: Sendable, Hashable {
        /// User and system tags: native sends, listing.
        case installation
        /// Also template tags: candidates for a template send (a superset, refined per template in memory).
        case includingTemplates
    }

    /// The tag expression, or `nil` for every installation.
    public var expression: TagExpression?
    /// Which tags the expression sees.
    public var scope: TagScope
    /// Only these platforms, or all when `nil`.
    public var platforms: [Platform]?
    /// Whether installations whose channel expired are included. Sends exclude them.
    public var includeExpired: Bool
    /// Only installations up to and including this position (an audience partition's end), or all when `nil`.
    public var upTo: InstallationCursor?
    /// Which kinds of rows: installations, native and template registrations. Native sends select
    /// ``AudienceKinds/nativeSends``, template sends ``AudienceKinds/templateSends``.
    public var kinds: AudienceKinds
    /// What each installation read carries.
    public var detail: Detail

    /// What a query reads of each installation.
    public enum Detail: Sendable, Hashable {
        /// The whole installation.
        case whole
        /// Only where a native send goes: id, platform and push channel. Tags, templates, user, expiry and update
        /// time are left out (empty), which spares a fan-out decoding them for every device.
        case address
    }

    /// Creates a query.
    public init(
        expression: TagExpression? = nil, scope: TagScope = .installation, platforms: [Platform]? = nil,
        includeExpired: Bool = true, upTo: InstallationCursor? = nil, kinds: AudienceKinds = .all,
        detail: Detail = .whole
    ) {
        self.detail = detail
        self.upTo = upTo
        self.kinds = kinds
        self.expression = expression
        self.scope = scope
        self.platforms = platforms
        self.includeExpired = includeExpired
    }

    /// Whether the query selects a send's audience, as the dispatcher reads it page by page (live channels only, the
    /// rows a native or a template send reaches): a read that may be served by a replica behind the primary
    /// (``HubDatabase/audienceRead(_:_:)``). Listings and lookups through the API select otherwise and read the
    /// primary.
    public var selectsSendAudience: Bool {
        !includeExpired && (kinds == .nativeSends || kinds == .templateSends)
    }
}

/// The kinds of rows the installation store holds: installations and the two kinds of registrations.
public struct AudienceKinds: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Installations.
    public static let installations = AudienceKinds(rawValue: 1 << 0)
    /// Native registrations: receive native sends only.
    public static let nativeRegistrations = AudienceKinds(rawValue: 1 << 1)
    /// Template registrations: receive template sends only.
    public static let templateRegistrations = AudienceKinds(rawValue: 1 << 2)

    /// Every row.
    public static let all: AudienceKinds = [.installations, .nativeRegistrations, .templateRegistrations]
    /// What a native send reaches.
    public static let nativeSends: AudienceKinds = [.installations, .nativeRegistrations]
    /// What a template send reaches.
    public static let templateSends: AudienceKinds = [.installations, .templateRegistrations]

    /// The values of the store's `kind` column these kinds select (0 installation, 1 native, 2 template).
    public var storedValues: [Int] {
        [(AudienceKinds.installations, 0), (.nativeRegistrations, 1), (.templateRegistrations, 2)]
            .filter { contains($0.0) }.map(\.1)
    }
}

/// A position in a query's results, for keyset paging. Opaque to callers.
public struct InstallationCursor: Sendable, Hashable, Comparable {
    /// The store's ordering key of the last installation returned.
    public let position: Int64

    /// Creates a cursor.
    public init(position: Int64) { self.position = position }

    /// The cursor as a continuation token.
    public var token: String { String(position, radix: 36) }

    /// Parses a continuation token.
    public init(token: String) throws(HubError) {
        guard let position = Int64(token, radix: 36), position >= 0 else {
            throw HubError(.invalidContinuationToken, "the continuation token '\(token.prefix(40))' is not one this hub issued")
        }
        self.position = position
    }

    public static func < (lhs: InstallationCursor, rhs: InstallationCursor) -> Bool { lhs.position < rhs.position }
}

/// One page of installations.
public struct InstallationPage: Sendable {
    /// The installations, in store order.
    public var installations: [Installation]
    /// Where the next page starts, or `nil` when this was the last page.
    public var next: InstallationCursor?

    /// Creates a page.
    public init(installations: [Installation], next: InstallationCursor?) {
        self.installations = installations
        self.next = next
    }
}

/// Where a hub keeps its installations, and the registrations stored beside them (``RegistrationStore``).
///
/// The installation methods see installations only; queries select by ``InstallationQuery/kinds``.
///
/// Writes are visible to the next read (read-your-writes). Queries page by key, so an audience of any size is
/// streamed without being loaded into memory.
public protocol InstallationStore: RegistrationStore {
    /// Creates or replaces an installation; sets `lastUpdate` and clears `expiredPushChannel`. Returns it as stored.
    ///
    /// The stored row is replaced only if `registrant` reaches it (``Registrant/reaches(owner:)``), decided in the
    /// write itself, so of two concurrent writes of one id by different users at most one succeeds. The
    /// installation's `userId` must be the registrant's user (none for ``Registrant/listenKey``).
    ///
    /// - Throws: ``HubError/Code/conflict`` when the id belongs to a registration or to a row the registrant does
    ///   not reach.
    func upsert(_ installation: Installation, as registrant: Registrant) async throws -> Installation

    /// Creates or replaces many installations in one transaction (imports, benchmarks).
    func upsert(contentsOf installations: [Installation]) async throws

    /// Reads, changes and writes an installation atomically, if `registrant` reaches it. Throws
    /// ``HubError/Code/notFound`` when absent or out of reach (the two are not told apart).
    func update(
        id: String, as registrant: Registrant, _ change: @Sendable (inout Installation) throws(HubError) -> Void
    ) async throws -> Installation

    /// Reads an installation.
    func installation(id: String) async throws -> Installation?

    /// Deletes an installation if `registrant` reaches it; returns whether it was deleted.
    @discardableResult
    func delete(id: String, as registrant: Registrant) async throws -> Bool

    /// Returns up to `limit` installations after `cursor`.
    func query(_ query: InstallationQuery, after cursor: InstallationCursor?, limit: Int) async throws -> InstallationPage

    /// Counts the installations a query selects.
    func count(_ query: InstallationQuery) async throws -> Int

    /// Marks an installation's channel expired if it still has `pushChannel` and was not updated after
    /// `notUpdatedAfter`. Returns whether it was marked.
    @discardableResult
    func markChannelExpired(installationID: String, pushChannel: PushChannel, notUpdatedAfter: Date?) async throws -> Bool

    /// Deletes an installation if it still has `pushChannel` (the delete-on-expiry policy).
    @discardableResult
    func deleteIfChannel(installationID: String, pushChannel: PushChannel) async throws -> Bool

    /// Deletes up to `limit` installations whose `expirationTime` is not after `now` (their tags go with them);
    /// returns how many were deleted. Installations without an expiration time never expire.
    @discardableResult
    func deleteExpired(before now: Date, limit: Int) async throws -> Int
}

extension InstallationStore {
    /// Creates or replaces an installation whoever it belongs to.
    public func upsert(_ installation: Installation) async throws -> Installation {
        try await upsert(installation, as: .unrestricted)
    }

    /// Reads, changes and writes an installation atomically, whoever it belongs to.
    public func update(
        id: String, _ change: @Sendable (inout Installation) throws(HubError) -> Void
    ) async throws -> Installation {
        try await update(id: id, as: .unrestricted, change)
    }

    /// Deletes an installation whoever it belongs to; returns whether it existed.
    @discardableResult
    public func delete(id: String) async throws -> Bool {
        try await delete(id: id, as: .unrestricted)
    }
}

extension InstallationStore {
    /// Applies expired-channel marks one by one, for callers that run the ``Dispatcher`` without a delivery worker
    /// (adapter tests, tools). The worker applies them in its checkpoint's transaction instead.
    public func apply(_ marks: [ExpiredChannel]) async throws {
        for mark in marks {
            switch mark.policy {
            case .markExpired:
                try await markChannelExpired(
                    installationID: mark.installationID, pushChannel: mark.pushChannel, notUpdatedAfter: mark.expiredAt)
            case .delete:
                try await deleteIfChannel(installationID: mark.installationID, pushChannel: mark.pushChannel)
            }
        }
    }

    /// Streams every installation a query selects after `cursor`, one page at a time.
    public func pages(_ query: InstallationQuery, pageSize: Int, after cursor: InstallationCursor? = nil) -> InstallationPages {
        InstallationPages(store: self, query: query, pageSize: pageSize, start: cursor)
    }
}

/// An async sequence of pages of a query.
public struct InstallationPages: AsyncSequence, Sendable {
    public typealias Element = InstallationPage
    let store: any InstallationStore
    let query: InstallationQuery
    let pageSize: Int
    let start: InstallationCursor?

    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: any InstallationStore
        let query: InstallationQuery
        let pageSize: Int
        var cursor: InstallationCursor?
        var finished = false

        public mutating func next() async throws -> InstallationPage? {
            guard !finished else { return nil }
            let page = try await store.query(query, after: cursor, limit: pageSize)
            cursor = page.next
            finished = page.next == nil
            if page.installations.isEmpty { return nil }
            return page
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(store: store, query: query, pageSize: pageSize, cursor: start)
    }
}
