import Foundation

/// Registrations as rows of the installations table (`kind` 1 native, 2 template): the dispatcher reads them like
/// installations without system tags, and a template registration's template is the row's only template, kept
/// under an empty name (a registration's `TemplateName` is no tag, unlike an installation template's name). The
/// description's own fields are kept in the `registration` column, so what is read back is what was written; its
/// push variables in `push_variables`, as an installation's.
extension SQLInstallationStore {
    /// The description fields kept for a registration row.
    struct StoredDescription: Codable {
        var template: RegistrationTemplate?
    }

    public func putRegistration(
        _ registration: Registration, condition: ETagCondition, as registrant: Registrant
    ) async throws -> Registration {
        let now = clock.now()
        let id = registration.registrationID
        let lock = database.dialect.lockForUpdate
        let description = String(decoding: try JSONEncoder().encode(StoredDescription(template: registration.template)), as: UTF8.self)
        var templates: SQLValue = .null
        if let template = registration.template {
            let map = ["": template.installationTemplate]
            templates = .text(String(decoding: try JSONEncoder().encode(map), as: UTF8.self))
        }
        let isObject: Bool
        if case .object = registration.pushChannel { isObject = true } else { isObject = false }
        let binds: [SQLValue] = [
            .text(id), .text(registration.platform.name), .text(registration.pushChannel.storageKey),
            .integer(isObject ? 1 : 0), registrant.user.map { .text($0) } ?? .null,
            .text(registration.tags.joined(separator: "\n")), templates,
            try Self.pushVariablesValue(registration.pushVariables), registration.expirationTime.map { .float($0.timeIntervalSince1970) } ?? .null,
            .float(now.timeIntervalSince1970), .float(now.timeIntervalSince1970),
            .integer(registration.template == nil ? 1 : 2), .text(description),
        ]
        // A user's write makes the registration that user's; other writes keep its owner. A write that is not
        // unrestricted replaces only a registration of no user or of the writing user, checked in the upsert itself.
        let ownerGuard =
            registrant == .unrestricted
            ? "" : " AND (installations.user_id IS NULL OR installations.user_id = excluded.user_id)"
        return try await database.transaction { connection in
            let existing = try await connection.query(
                "SELECT kind, version, user_id FROM installations WHERE id = ?\(lock)", [.text(id)])
            if let row = existing.first {
                guard row.int("kind") != 0 else {
                    throw HubError(.conflict, "'\(id)' is the id of an installation; use /installations/\(id) or another registration id")
                }
                guard registrant.reaches(owner: row.string("user_id")) else { throw Self.registrationTaken(id, by: registrant) }
                if case .equals(let expected) = condition, row.int("version") != expected {
                    throw HubError(
                        .preconditionFailed,
                        "registration '\(id)' has ETag \(row.int("version") ?? 0), not \(expected); read it again and retry")
                }
            } else if condition != .unconditional {
                throw HubError(.notFound, "registration '\(id)' does not exist")
            }
            let rows = try await connection.query(
                """
                INSERT INTO installations
                    (id, platform, push_channel, channel_is_object, user_id, tags, templates, push_variables, expired,
                     expiration_time, last_update, created_time, kind, registration)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET
                    platform = excluded.platform, push_channel = excluded.push_channel,
                    channel_is_object = excluded.channel_is_object,
                    user_id = COALESCE(excluded.user_id, installations.user_id), tags = excluded.tags,
                    templates = excluded.templates, push_variables = excluded.push_variables, expired = 0,
                    expiration_time = excluded.expiration_time,
                    last_update = excluded.last_update, kind = excluded.kind, registration = excluded.registration,
                    version = installations.version + 1
                WHERE installations.kind <> 0\(ownerGuard)
                RETURNING \(Self.columns.replacingOccurrences(of: "i.", with: ""))
                """,
                binds)
            guard let row = rows.first, let rid = row.int("rid") else {
                // Written by someone else since the read above (PostgreSQL locks no row that did not exist yet).
                let kind = try await connection.query("SELECT kind FROM installations WHERE id = ?", [.text(id)]).first?.int("kind")
                if kind == 0 { throw HubError(.conflict, "'\(id)' is the id of an installation; use another registration id") }
                throw Self.registrationTaken(id, by: registrant)
            }
            _ = try await connection.query("DELETE FROM installation_tags WHERE rid = ?", [.integer(rid)])
            if !registration.tags.isEmpty {
                var tagBinds: [SQLValue] = []
                for tag in registration.tags { tagBinds += [.text(tag), .integer(rid), .integer(0)] }
                let values = Array(repeating: "(?, ?, ?)", count: registration.tags.count).joined(separator: ", ")
                _ = try await connection.query(
                    "INSERT INTO installation_tags (tag, rid, scope) VALUES \(values) ON CONFLICT DO NOTHING", tagBinds)
            }
            return try Self.registrations(of: row).first ?? registration
        }
    }

    public func registration(id: String) async throws -> Registration? {
        if let (installationID, templateName) = RegistrationID.parseProjection(id) {
            let rows = try await database.read(
                "SELECT \(Self.columns) FROM installations i WHERE i.id = ? AND i.kind = 0", [.text(installationID)])
            guard let row = rows.first else { return nil }
            let wanted = templateName.map { RegistrationID.projection(installationID: installationID, templateName: $0) } ?? id
            return try Self.registrations(of: row).first { $0.registrationID == wanted }
        }
        let rows = try await database.read(
            "SELECT \(Self.columns) FROM installations i WHERE i.id = ? AND i.kind <> 0", [.text(id)])
        return try rows.first.flatMap { try Self.registrations(of: $0).first }
    }

    /// The refusal of a write to a registration that belongs to someone the registrant does not reach.
    static func registrationTaken(_ id: String, by registrant: Registrant) -> HubError {
        if registrant.user == nil {
            return HubError(
                .conflict,
                "registration '\(id)' belongs to a user; write it with that user's token (Authorization: Bearer <the app's user JWT>) or use another registration id")
        }
        return HubError(
            .conflict,
            "registration '\(id)' belongs to another user; create a new registration id for this user (POST /registrationIDs)")
    }

    public func deleteRegistration(id: String, condition: ETagCondition, as registrant: Registrant) async throws -> Bool {
        let lock = database.dialect.lockForUpdate
        let owner = Self.ownerCondition(registrant)
        return try await database.transaction { connection in
            let rows = try await connection.query(
                "SELECT version FROM installations WHERE id = ? AND kind <> 0\(owner.sql)\(lock)", [.text(id)] + owner.binds)
            guard let row = rows.first else { return false }
            if case .equals(let expected) = condition, row.int("version") != expected {
                throw HubError(
                    .preconditionFailed,
                    "registration '\(id)' has ETag \(row.int("version") ?? 0), not \(expected); read it again and retry")
            }
            _ = try await connection.query("DELETE FROM installations WHERE id = ? AND kind <> 0", [.text(id)])
            return true
        }
    }

    public func containsID(_ id: String) async throws -> Bool {
        !(try await database.read("SELECT rid FROM installations WHERE id = ?", [.text(id)])).isEmpty
    }

    public func registrations(
        _ query: RegistrationQuery, after cursor: RegistrationCursor?, limit: Int, reachableBy registrant: Registrant
    ) async throws -> RegistrationPage {
        let owner = Self.ownerCondition(registrant, column: "i.user_id")
        precondition(limit > 0, "a page holds at least one registration")
        var result: [Registration] = []
        var position = cursor?.position ?? 0
        var skip = cursor?.index ?? 0
        // A row projects one registration or more, so rows are read until the page is full.
        let rowsPerRead = min(limit + 1, 500)
        while true {
            var conditions = ["i.rid >= ?"]
            var binds: [SQLValue] = [.integer(Int(position))]
            switch query {
            case .all:
                break
            case .channel(let handles, let platforms):
                conditions.append("i.push_channel IN (\(Array(repeating: "?", count: max(handles.count, 1)).joined(separator: ", ")))")
                binds += handles.isEmpty ? [.text("")] : handles.map { .text($0) }
                if let platforms {
                    conditions.append("i.platform IN (\(Array(repeating: "?", count: max(platforms.count, 1)).joined(separator: ", ")))")
                    binds += platforms.isEmpty ? [.text("")] : platforms.map { .text($0.name) }
                }
            case .tag(let tag):
                conditions.append("i.rid IN (SELECT t.rid FROM installation_tags t WHERE t.tag = ? AND t.rid >= ?)")
                binds += [.text(tag), .integer(Int(position))]
            }
            if !owner.sql.isEmpty {
                conditions.append(String(owner.sql.dropFirst(" AND ".count)))
                binds += owner.binds
            }
            let rows = try await database.read(
                "SELECT \(Self.columns) FROM installations i WHERE \(conditions.joined(separator: " AND ")) ORDER BY i.rid LIMIT \(rowsPerRead)",
                binds)
            for row in rows {
                guard let rid = row.int64("rid") else { continue }
                var expanded = try Self.registrations(of: row)
                if case .tag(let tag) = query { expanded = expanded.filter { $0.tags.contains(tag) } }
                let first = rid == position ? skip : 0
                for index in expanded.indices where index >= first {
                    if result.count == limit {
                        return RegistrationPage(registrations: result, next: RegistrationCursor(position: rid, index: index))
                    }
                    result.append(expanded[index])
                }
            }
            guard rows.count == rowsPerRead, let last = rows.last?.int64("rid") else {
                return RegistrationPage(registrations: result, next: nil)
            }
            position = last + 1
            skip = 0
        }
    }

    /// The registrations a row stands for: a stored registration, or the projections of an installation (its
    /// native registration, then one per template by name). An installation on a platform without a registration
    /// format projects nothing.
    static func registrations(of row: SQLRow) throws -> [Registration] {
        let kind = row.int("kind") ?? 0
        let installation = try decode(row)
        let etag = row.int("version") ?? 1
        let created = row.double("created_time").map { Date(timeIntervalSince1970: $0) } ?? installation.lastUpdate
        if kind != 0 {
            var template: RegistrationTemplate?
            if let json = row.string("registration") {
                template = try JSONDecoder().decode(StoredDescription.self, from: Data(json.utf8)).template
            }
            return [
                Registration(
                    registrationID: installation.installationID, platform: installation.platform,
                    pushChannel: installation.pushChannel, tags: installation.tags, template: template,
                    pushVariables: installation.pushVariables, etag: etag,
                    expirationTime: installation.expirationTime, createdAt: created, lastUpdate: installation.lastUpdate,
                    userID: row.string("user_id"))
            ]
        }
        let id = installation.installationID
        let routing = unique(installation.tags + installation.systemTags)
        var projections = [
            Registration(
                registrationID: RegistrationID.projection(installationID: id), platform: installation.platform,
                pushChannel: installation.pushChannel, tags: routing, pushVariables: installation.pushVariables, etag: etag,
                expirationTime: installation.expirationTime, createdAt: created, lastUpdate: installation.lastUpdate,
                installationID: id, userID: installation.userID)
        ]
        for (name, template) in installation.templates.sorted(by: { $0.key < $1.key }) {
            let headers = template.headers.sorted { $0.key < $1.key }.map { RegistrationHeader(name: $0.key, value: $0.value) }
            projections.append(
                Registration(
                    registrationID: RegistrationID.projection(installationID: id, templateName: name),
                    platform: installation.platform, pushChannel: installation.pushChannel,
                    // The template's name is a tag of its registration, as Azure lists it (when it is a valid tag).
                    tags: unique(installation.tags + template.routingTags(name: name) + installation.systemTags),
                    template: RegistrationTemplate(name: name, body: template.body, expiry: template.expiry, headers: headers),
                    pushVariables: installation.pushVariables, etag: etag, expirationTime: installation.expirationTime, createdAt: created,
                    lastUpdate: installation.lastUpdate, installationID: id, userID: installation.userID))
        }
        return projections
    }

    static func unique(_ tags: [String]) -> [String] {
        var seen = Set<String>()
        return tags.filter { seen.insert($0).inserted }
    }
}
