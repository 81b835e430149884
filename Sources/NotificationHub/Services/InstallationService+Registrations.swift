/// Registrations (Azure's older device model): validated like installations, stored beside them.
extension InstallationService {
    /// Reads and writes the registration descriptions of the hub's adapters (as its configuration stands now).
    public var registrationXML: RegistrationXML { configuration.adapters.registrationXML }

    /// A new registration id that no installation or registration of this hub uses yet. Nothing is stored.
    public func createRegistrationID() async throws -> String {
        while true {
            let id = RegistrationID.generate()
            if try await !core.installationStore.containsID(id) { return id }
        }
    }

    /// Validates and stores a new registration under a new id, on behalf of `registrant`.
    public func createRegistration(
        _ registration: Registration, as registrant: Registrant = .unrestricted
    ) async throws -> Registration {
        var registration = registration
        registration.registrationID = try await createRegistrationID()
        return try await putRegistration(registration, condition: .unconditional, as: registrant)
    }

    /// Validates and stores a registration under its id (create or replace), if `condition` holds, on behalf of
    /// `registrant`, whose tags are checked as ``authorize(_:as:)`` describes.
    ///
    /// - Throws: ``HubError`` with ``HubError/Code/conflict`` for the id of an installation, of an installation's
    ///   projection or of a registration out of the registrant's reach, ``HubError/Code/preconditionFailed`` for a
    ///   stale ETag, ``HubError/Code/notFound`` when `condition` needs an existing registration.
    public func putRegistration(
        _ registration: Registration, condition: ETagCondition, as registrant: Registrant = .unrestricted
    ) async throws -> Registration {
        if let (installationID, _) = RegistrationID.parseProjection(registration.registrationID) {
            throw Self.projectionIsReadOnly(registration.registrationID, installationID: installationID)
        }
        try validate(registration)
        try authorize(registration, as: registrant)
        var stored = registration
        stored.template?.priorityHeader = configuration.adapters.registrationXML.format(of: registration.platform)?.priority?.header
        stored.installationID = nil
        stored.expirationTime = nil
        stored.userID = nil
        return try await core.installationStore.putRegistration(stored, condition: condition, as: registrant)
    }

    /// A stored registration or the projection of an installation, if `registrant` reaches it; `nil` when it does
    /// not exist or is out of reach, which callers must not tell apart.
    public func registration(id: String, as registrant: Registrant = .unrestricted) async throws -> Registration? {
        guard let registration = try await core.installationStore.registration(id: id),
            registrant.reaches(owner: registration.userID),
            registrationXML.format(of: registration.platform) != nil
        else { return nil }
        return registration
    }

    /// A page of the registrations `registrant` reaches: stored registrations and installations' projections, of
    /// platforms with a registration description. A page may hold fewer than `limit` and still have a next one.
    public func registrations(
        _ query: RegistrationQuery, after cursor: RegistrationCursor?, limit: Int, reachableBy registrant: Registrant
    ) async throws -> RegistrationPage {
        var page = try await core.installationStore.registrations(query, after: cursor, limit: limit, reachableBy: registrant)
        // Installations of a platform without a registration description (one Azure never had) project none.
        let xml = registrationXML
        page.registrations.removeAll { xml.format(of: $0.platform) == nil }
        return page
    }

    /// Deletes a registration `registrant` reaches if `condition` holds; returns whether it was deleted (`false`
    /// for one that does not exist or is out of reach).
    ///
    /// For the projection of an installation, as Azure does: the native registration an installation projects
    /// stands for the installation, which is deleted; a template's registration stands for that template, which is
    /// removed from the installation (its other registrations stay). The ETag is the installation's version.
    public func deleteRegistration(
        id: String, condition: ETagCondition, as registrant: Registrant = .unrestricted
    ) async throws -> Bool {
        if let (installationID, templateName) = RegistrationID.parseProjection(id) {
            guard let projection = try await registration(id: id, as: registrant) else { return false }
            if case .equals(let expected) = condition, projection.etag != expected {
                throw HubError(
                    .preconditionFailed,
                    "registration '\(id)' has ETag \(projection.etag), not \(expected); read it again and retry")
            }
            guard let templateName else {
                guard try await core.installationStore.delete(id: installationID, as: registrant) else { return false }
                // Its sub-resources (Live Activity tokens) go with it, as through the installation API.
                try await deleteSubResources(of: installationID)
                return true
            }
            do {
                _ = try await core.installationStore.update(id: installationID, as: registrant) { installation throws(HubError) in
                    guard installation.templates.removeValue(forKey: templateName) != nil else {
                        throw HubError(.notFound, "installation '\(installationID)' has no template '\(templateName)'")
                    }
                }
            } catch let error as HubError where error.code == .notFound {
                return false
            }
            return true
        }
        return try await core.installationStore.deleteRegistration(id: id, condition: condition, as: registrant)
    }

    static func projectionIsReadOnly(_ id: String, installationID: String) -> HubError {
        HubError(
            .conflict,
            "registration '\(id)' is derived from installation '\(installationID)' and cannot be changed here; change or delete the installation through /installations/\(installationID)")
    }

    /// Checks a registration against the hub's rules and its platform's adapter: id, tags, handle, template.
    public func validate(_ registration: Registration) throws(HubError) {
        try RegistrationID.validate(registration.registrationID)
        do {
            try Tag.validate(registration.tags, limit: configuration.limits.tagsPerInstallation)
        } catch {
            throw HubError(error.code, "<Tags>: \(error.message)")
        }
        do {
            try PushVariables.validate(registration.pushVariables)
        } catch {
            throw HubError(error.code, "<PushVariables>: \(error.message)")
        }
        try configuration.adapters.validate(pushChannel: registration.pushChannel, platform: registration.platform)
        guard let template = registration.template else { return }
        guard let adapter = configuration.adapters.adapter(for: registration.platform),
            adapter.descriptor.templateFormats[registration.platform] != nil
        else {
            throw HubError(
                .invalidRegistration, "this hub does not send templates to platform '\(registration.platform)'; register natively")
        }
        if let name = template.name {
            do {
                try Identifier.validate(name, as: .templateName)
            } catch {
                throw HubError(error.code, "<TemplateName>: \(error.message)")
            }
        }
        if let priority = template.priority {
            guard let rule = configuration.adapters.registrationXML.format(of: registration.platform)?.priority else {
                throw HubError(.invalidRegistration, "templates of platform '\(registration.platform)' have no <Priority>; leave it out")
            }
            guard rule.values.contains(priority) else {
                throw HubError(
                    .invalidRegistration,
                    "<\(rule.element)> must be \(rule.values.joined(separator: ", ")) (\(rule.header)); got '\(priority.prefix(20))'")
            }
            if template.headers.contains(where: { $0.name.lowercased() == rule.header.lowercased() }) {
                throw HubError(.invalidRegistration, "give the \(rule.element == "Priority" ? "priority" : rule.element) once: as <\(rule.element)> or as a \(rule.header) header")
            }
        }
        do {
            _ = try Template(parsing: template.body)
        } catch {
            throw HubError(.invalidTemplate, "<BodyTemplate>: \(error.message)")
        }
        for header in template.headers {
            do {
                try NotificationHeaders.validate(name: header.name)
                _ = try Template(parsing: header.value, kind: .text)
            } catch {
                throw HubError(.invalidTemplate, "header '\(header.name)': \(error.message)")
            }
        }
        if let expiry = template.expiry {
            do {
                _ = try Template(parsing: expiry, kind: .text)
            } catch {
                throw HubError(.invalidTemplate, "<Expiry>: \(error.message)")
            }
        }
    }
}
