import Foundation

/// The condition of a conditional write (`If-Match`).
public enum ETagCondition: Sendable, Hashable {
    /// No condition: create or replace.
    case unconditional
    /// `If-Match: *`: the registration must exist.
    case exists
    /// `If-Match: "3"`: the registration must exist with this ETag.
    case equals(Int)

    /// Parses an `If-Match` header: `*`, `"3"`, `W/"3"` or `3`; and `"*"`, the quoted star Azure's .NET SDK sends
    /// from `DeleteRegistrationAsync(id)` and `UpdateRegistrationAsync` without an ETag, which Azure reads as `*`.
    public init(ifMatch header: String?) throws(HubError) {
        guard let header else {
            self = .unconditional
            return
        }
        var text = header.trimmingCharacters(in: .whitespaces)
        if text == "*" || text == "\"*\"" {
            self = .exists
            return
        }
        if text.hasPrefix("W/") { text.removeFirst(2) }
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
        guard let version = Int(text), version >= 0 else {
            throw HubError(.invalidRegistration, "If-Match must be * or an ETag this hub issued, such as \"3\"; got '\(header.prefix(40))'")
        }
        self = .equals(version)
    }
}

/// Which registrations a listing selects.
public enum RegistrationQuery: Sendable, Hashable {
    /// Every registration, including the projections of installations.
    case all
    /// Registrations whose device handle is one of `handles`, on one of `platforms` (any when `nil`).
    case channel(handles: [String], platforms: [Platform]?)
    /// Registrations carrying a tag (for projections: the installation's tags, its template's tags and its system
    /// tags).
    case tag(String)
}

/// A position in a registration listing: the row, and how many of its registrations were already returned.
public struct RegistrationCursor: Sendable, Hashable {
    /// The store's row position.
    public var position: Int64
    /// Registrations of that row already returned (an installation projects several).
    public var index: Int

    /// Creates a cursor.
    public init(position: Int64, index: Int) {
        self.position = position
        self.index = index
    }

    /// The cursor as a continuation token, e.g. `2s-1`.
    public var token: String { "\(String(position, radix: 36))-\(index)" }

    /// Parses a continuation token this hub issued.
    public init(token: String) throws(HubError) {
        let parts = token.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count <= 13, let position = Int64(parts[0], radix: 36), position >= 0,
            parts[1].utf8.count <= 6, let index = Int(parts[1]), index >= 0
        else {
            throw HubError(.invalidContinuationToken, "the continuation token '\(token.prefix(40))' is not one this hub issued")
        }
        self.init(position: position, index: index)
    }
}

/// One page of registrations.
public struct RegistrationPage: Sendable {
    /// The registrations, in store order.
    public var registrations: [Registration]
    /// Where the next page starts, or `nil` after the last page.
    public var next: RegistrationCursor?

    /// Creates a page.
    public init(registrations: [Registration], next: RegistrationCursor?) {
        self.registrations = registrations
        self.next = next
    }
}

/// Where a hub keeps registrations. They live beside installations (the same rows, see `docs/registrations.md`),
/// so every audience query and feedback update covers them.
public protocol RegistrationStore: Sendable {
    /// Creates or replaces a stored registration if `condition` holds and `registrant` reaches it. Returns it as
    /// stored, with its new ETag. A user's write makes the registration that user's; other writes keep its owner.
    /// Whether the row is reached is decided in the write itself.
    ///
    /// - Throws: ``HubError/Code/notFound`` when `condition` needs an existing registration and there is none,
    ///   ``HubError/Code/preconditionFailed`` for a stale ETag, ``HubError/Code/conflict`` when the id belongs to an
    ///   installation or to a registration the registrant does not reach.
    func putRegistration(
        _ registration: Registration, condition: ETagCondition, as registrant: Registrant
    ) async throws -> Registration

    /// A stored registration, or the projection of an installation for a projection id.
    func registration(id: String) async throws -> Registration?

    /// Deletes a stored registration if `condition` holds and `registrant` reaches it; returns whether it was
    /// deleted (`false` also for a registration out of reach).
    func deleteRegistration(id: String, condition: ETagCondition, as registrant: Registrant) async throws -> Bool

    /// Up to `limit` registrations after `cursor` that `registrant` reaches: stored registrations and the
    /// projections of installations.
    func registrations(
        _ query: RegistrationQuery, after cursor: RegistrationCursor?, limit: Int, reachableBy registrant: Registrant
    ) async throws -> RegistrationPage

    /// Whether a row (installation or registration) has this id.
    func containsID(_ id: String) async throws -> Bool
}

extension RegistrationStore {
    /// Creates or replaces a stored registration if `condition` holds, whoever it belongs to.
    public func putRegistration(_ registration: Registration, condition: ETagCondition) async throws -> Registration {
        try await putRegistration(registration, condition: condition, as: .unrestricted)
    }

    /// Deletes a stored registration if `condition` holds, whoever it belongs to; returns whether it existed.
    public func deleteRegistration(id: String, condition: ETagCondition) async throws -> Bool {
        try await deleteRegistration(id: id, condition: condition, as: .unrestricted)
    }

    /// Up to `limit` registrations after `cursor`, whoever they belong to.
    public func registrations(
        _ query: RegistrationQuery, after cursor: RegistrationCursor?, limit: Int
    ) async throws -> RegistrationPage {
        try await registrations(query, after: cursor, limit: limit, reachableBy: .unrestricted)
    }
}
