extension PostgresHubDatabase {
    /// The hub's schema on PostgreSQL, one versioned step after another (the same tables as
    /// ``SQLiteHubDatabase/hubSchema``). Never edit a released step; add a new one.
    public static let postgresSchema: [SQLiteHubDatabase.Migration] = [
        .init(
            version: 1,
            statements: [
                """
                CREATE TABLE installations (
                    rid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    platform TEXT NOT NULL,
                    push_channel TEXT NOT NULL,
                    channel_is_object BIGINT NOT NULL DEFAULT 0,
                    user_id TEXT,
                    tags TEXT NOT NULL,
                    templates TEXT,
                    expired BIGINT NOT NULL DEFAULT 0,
                    expiration_time DOUBLE PRECISION,
                    last_update DOUBLE PRECISION NOT NULL
                )
                """,
                "CREATE INDEX installations_platform ON installations(platform, rid)",
                """
                CREATE TABLE installation_tags (
                    tag TEXT NOT NULL,
                    rid BIGINT NOT NULL REFERENCES installations(rid) ON DELETE CASCADE,
                    scope BIGINT NOT NULL,
                    PRIMARY KEY (tag, rid, scope)
                )
                """,
                "CREATE INDEX installation_tags_rid ON installation_tags(rid)",
            ]),
        .init(
            version: 2,
            statements: [
                """
                CREATE TABLE notifications (
                    id TEXT PRIMARY KEY,
                    format TEXT NOT NULL,
                    body BYTEA NOT NULL,
                    headers TEXT NOT NULL,
                    audience TEXT NOT NULL,
                    state TEXT NOT NULL,
                    enqueue_time DOUBLE PRECISION NOT NULL,
                    scheduled_time DOUBLE PRECISION,
                    start_time DOUBLE PRECISION,
                    end_time DOUBLE PRECISION,
                    counts TEXT NOT NULL DEFAULT '{}',
                    cursor BIGINT,
                    lease_owner TEXT,
                    lease_expires DOUBLE PRECISION,
                    idempotency_key TEXT UNIQUE
                )
                """,
                "CREATE INDEX notifications_due ON notifications(state, scheduled_time)",
            ]),
        .init(
            version: 3,
            statements: [
                """
                CREATE TABLE notification_failures (
                    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
                    time DOUBLE PRECISION NOT NULL,
                    platform TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    reason TEXT,
                    installation_id TEXT,
                    handle TEXT NOT NULL
                )
                """,
                "CREATE INDEX notification_failures_notification ON notification_failures(notification_id, seq)",
            ]),
        .init(
            version: 4,
            statements: [
                """
                CREATE TABLE secure_notifications (
                    id TEXT PRIMARY KEY,
                    audience TEXT NOT NULL,
                    sealed_payload BYTEA NOT NULL,
                    created_time DOUBLE PRECISION NOT NULL,
                    expires_time DOUBLE PRECISION NOT NULL,
                    read_once BIGINT NOT NULL,
                    read_time DOUBLE PRECISION
                )
                """,
                "CREATE INDEX secure_notifications_expiry ON secure_notifications(expires_time)",
            ]),
        .init(
            version: 5,
            statements: ["CREATE TABLE hub_positions (name TEXT PRIMARY KEY, value BIGINT NOT NULL)"]),
        .init(
            version: 6,
            statements: [
                """
                CREATE TABLE notification_partitions (
                    notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
                    partition BIGINT NOT NULL,
                    lower_bound BIGINT,
                    upper_bound BIGINT,
                    cursor BIGINT,
                    state TEXT NOT NULL,
                    lease_owner TEXT,
                    lease_expires DOUBLE PRECISION,
                    PRIMARY KEY (notification_id, partition)
                )
                """,
                "CREATE INDEX notification_partitions_work ON notification_partitions(state, lease_expires)",
                """
                INSERT INTO notification_partitions (notification_id, partition, cursor, state)
                SELECT id, 0, cursor, 'Pending' FROM notifications WHERE state = 'Processing'
                """,
            ]),
        .init(
            version: 7,
            statements: [
                // Claims take the oldest enqueued notification from the index instead of sorting the backlog.
                "CREATE INDEX notifications_enqueued ON notifications(state, enqueue_time)"
            ]),
        .init(
            version: 8,
            statements: [
                // Why a notification ended without being delivered (a poison row, a fan-out that kept failing).
                "ALTER TABLE notifications ADD COLUMN reason TEXT",
                // How often a partition was claimed: one that keeps failing is ended instead of retried forever.
                "ALTER TABLE notification_partitions ADD COLUMN claims BIGINT NOT NULL DEFAULT 0",
            ]),
        .init(
            version: 9,
            statements: [
                // Registrations (Azure's older model) are rows of the installations table: kind 0 is an
                // installation, 1 a native registration, 2 a template registration. `version` is the row's ETag,
                // `registration` the description's own fields (JSON), `created_time` Atom's `published`.
                "ALTER TABLE installations ADD COLUMN kind BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE installations ADD COLUMN version BIGINT NOT NULL DEFAULT 1",
                "ALTER TABLE installations ADD COLUMN created_time DOUBLE PRECISION",
                "ALTER TABLE installations ADD COLUMN registration TEXT",
                // Registrations are listed by handle (`$filter=ChannelUri eq '…'`).
                "CREATE INDEX installations_push_channel ON installations(push_channel, rid)",
            ]),
        .init(
            version: 10,
            statements: [
                // The nodes working for the hub: each running hub process (its lease owner) beats every few seconds;
                // a node is live while its heartbeat is recent. `delivered` counts what it committed since it started.
                """
                CREATE TABLE hub_nodes (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    started_time DOUBLE PRECISION NOT NULL,
                    heartbeat_time DOUBLE PRECISION NOT NULL,
                    delivered BIGINT NOT NULL DEFAULT 0
                )
                """
            ]),
        .init(
            version: 11,
            statements: [
                // One installation's write as one call (one round trip, a transaction by itself): the row, guarded
                // like ``SQLInstallationStore``'s batch writes, then its tag index replaced. A function's statements
                // each see what other transactions committed before them, as the statements of a transaction do.
                // Returns the row id, or NULL when the row may not be replaced (nothing is written then).
                """
                CREATE FUNCTION hub_put_installation(
                    p_id TEXT, p_platform TEXT, p_channel TEXT, p_channel_is_object BIGINT, p_user TEXT, p_tags TEXT,
                    p_templates TEXT, p_expired BIGINT, p_expiration DOUBLE PRECISION, p_time DOUBLE PRECISION,
                    p_guarded BOOLEAN, p_tag_names TEXT[], p_tag_scopes BIGINT[]
                ) RETURNS BIGINT LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
                DECLARE
                    v_rid BIGINT;
                BEGIN
                    INSERT INTO installations
                        (id, platform, push_channel, channel_is_object, user_id, tags, templates, expired,
                         expiration_time, last_update, created_time)
                    VALUES (p_id, p_platform, p_channel, p_channel_is_object, p_user, p_tags, p_templates, p_expired,
                        p_expiration, p_time, p_time)
                    ON CONFLICT (id) DO UPDATE SET
                        platform = excluded.platform, push_channel = excluded.push_channel,
                        channel_is_object = excluded.channel_is_object, user_id = excluded.user_id,
                        tags = excluded.tags, templates = excluded.templates, expired = excluded.expired,
                        expiration_time = excluded.expiration_time, last_update = excluded.last_update,
                        version = installations.version + 1
                    WHERE installations.kind = 0 AND (NOT p_guarded OR installations.user_id IS NULL
                        OR installations.user_id = excluded.user_id)
                    RETURNING rid INTO v_rid;
                    IF v_rid IS NULL THEN
                        RETURN NULL;
                    END IF;
                    DELETE FROM installation_tags WHERE rid = v_rid;
                    INSERT INTO installation_tags (tag, rid, scope)
                    SELECT t.tag, v_rid, t.scope FROM unnest(p_tag_names, p_tag_scopes) AS t(tag, scope)
                    ON CONFLICT DO NOTHING;
                    RETURN v_rid;
                END
                $$
                """
            ]),
        .init(
            version: 12,
            statements: [
                // A device's push variables (JSON object of strings; NULL for none), for installations and
                // registrations alike.
                "ALTER TABLE installations ADD COLUMN push_variables TEXT",
                // The expiry sweep finds expired rows from this index; rows that never expire are not in it.
                "CREATE INDEX installations_expiration ON installations(expiration_time) WHERE expiration_time IS NOT NULL",
                // hub_put_installation (migration 11) with the push variables after the templates, as an overload:
                // the 13-argument form stays, so nodes not yet upgraded keep writing during a rolling upgrade (their
                // writes leave a row's push variables as they were).
                """
                CREATE FUNCTION hub_put_installation(
                    p_id TEXT, p_platform TEXT, p_channel TEXT, p_channel_is_object BIGINT, p_user TEXT, p_tags TEXT,
                    p_templates TEXT, p_push_variables TEXT, p_expired BIGINT, p_expiration DOUBLE PRECISION,
                    p_time DOUBLE PRECISION, p_guarded BOOLEAN, p_tag_names TEXT[], p_tag_scopes BIGINT[]
                ) RETURNS BIGINT LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
                DECLARE
                    v_rid BIGINT;
                BEGIN
                    INSERT INTO installations
                        (id, platform, push_channel, channel_is_object, user_id, tags, templates, push_variables,
                         expired, expiration_time, last_update, created_time)
                    VALUES (p_id, p_platform, p_channel, p_channel_is_object, p_user, p_tags, p_templates,
                        p_push_variables, p_expired, p_expiration, p_time, p_time)
                    ON CONFLICT (id) DO UPDATE SET
                        platform = excluded.platform, push_channel = excluded.push_channel,
                        channel_is_object = excluded.channel_is_object, user_id = excluded.user_id,
                        tags = excluded.tags, templates = excluded.templates,
                        push_variables = excluded.push_variables, expired = excluded.expired,
                        expiration_time = excluded.expiration_time, last_update = excluded.last_update,
                        version = installations.version + 1
                    WHERE installations.kind = 0 AND (NOT p_guarded OR installations.user_id IS NULL
                        OR installations.user_id = excluded.user_id)
                    RETURNING rid INTO v_rid;
                    IF v_rid IS NULL THEN
                        RETURN NULL;
                    END IF;
                    DELETE FROM installation_tags WHERE rid = v_rid;
                    INSERT INTO installation_tags (tag, rid, scope)
                    SELECT t.tag, v_rid, t.scope FROM unnest(p_tag_names, p_tag_scopes) AS t(tag, scope)
                    ON CONFLICT DO NOTHING;
                    RETURN v_rid;
                END
                $$
                """,
            ]),
        .init(
            version: 13,
            statements: [
                // Event webhooks (SQLite's migration 12): subscriptions, the outbox, and the triggers that write an
                // event in the transaction that causes it.
                """
                CREATE TABLE webhook_subscriptions (
                    subscription TEXT NOT NULL,
                    event TEXT NOT NULL,
                    PRIMARY KEY (subscription, event)
                )
                """,
                """
                CREATE TABLE webhook_outbox (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    subscription TEXT NOT NULL,
                    event TEXT NOT NULL,
                    created_time DOUBLE PRECISION NOT NULL,
                    data TEXT NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending',
                    attempts BIGINT NOT NULL DEFAULT 0,
                    next_attempt DOUBLE PRECISION NOT NULL DEFAULT 0,
                    lease_owner TEXT,
                    lease_expires DOUBLE PRECISION,
                    delivered_time DOUBLE PRECISION,
                    last_status BIGINT,
                    last_error TEXT
                )
                """,
                "CREATE INDEX webhook_outbox_due ON webhook_outbox(state, next_attempt)",
                """
                CREATE FUNCTION hub_webhook_notification_ended() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                BEGIN
                    INSERT INTO webhook_outbox (subscription, event, created_time, data)
                    SELECT s.subscription, s.event,
                        COALESCE(NEW.end_time, extract(epoch FROM clock_timestamp())),
                        json_build_object(
                            'notificationId', NEW.id, 'state', NEW.state, 'reason', NEW.reason,
                            'enqueueTime',
                            to_char(to_timestamp(NEW.enqueue_time) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'endTime',
                            to_char(to_timestamp(NEW.end_time) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'counts', NEW.counts::json)::text
                    FROM webhook_subscriptions s WHERE s.event = 'notification.completed';
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE TRIGGER webhook_notification_ended AFTER UPDATE OF state ON notifications FOR EACH ROW
                WHEN (NEW.state IS DISTINCT FROM OLD.state
                    AND NEW.state IN ('Completed', 'Abandoned', 'NoTargetFound', 'Cancelled'))
                EXECUTE FUNCTION hub_webhook_notification_ended()
                """,
                """
                CREATE FUNCTION hub_webhook_notification_failed() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                BEGIN
                    INSERT INTO webhook_outbox (subscription, event, created_time, data)
                    SELECT s.subscription, s.event, NEW.time,
                        json_build_object(
                            'notificationId', NEW.notification_id,
                            'time', to_char(to_timestamp(NEW.time) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'platform', NEW.platform, 'outcome', NEW.outcome, 'reason', NEW.reason,
                            'installationId', NEW.installation_id, 'pnsHandle', NEW.handle)::text
                    FROM webhook_subscriptions s
                    WHERE s.event = 'notification.failed'
                        OR (s.event = 'installation.channelExpired' AND NEW.outcome = 'ExpiredChannel'
                            AND NEW.installation_id IS NOT NULL);
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE TRIGGER webhook_notification_failed AFTER INSERT ON notification_failures FOR EACH ROW
                EXECUTE FUNCTION hub_webhook_notification_failed()
                """,
            ]),
        .init(
            version: 14,
            statements: [
                // Installation counts per platform, kind and expiry without scanning the installations. Writers only
                // append to `installation_count_deltas` (no row that concurrent installation writes would queue
                // for); a count adds the deltas to `installation_counts` and folds them in (``InstallationCounter``).
                """
                CREATE TABLE installation_counts (
                    platform TEXT NOT NULL,
                    kind BIGINT NOT NULL,
                    expired BIGINT NOT NULL,
                    n BIGINT NOT NULL,
                    PRIMARY KEY (platform, kind, expired)
                )
                """,
                """
                CREATE TABLE installation_count_deltas (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    platform TEXT NOT NULL,
                    kind BIGINT NOT NULL,
                    expired BIGINT NOT NULL,
                    delta BIGINT NOT NULL
                )
                """,
                """
                INSERT INTO installation_counts (platform, kind, expired, n)
                SELECT platform, kind, expired, COUNT(*) FROM installations GROUP BY platform, kind, expired
                """,
                """
                CREATE FUNCTION hub_installation_count_delta() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        INSERT INTO installation_count_deltas (platform, kind, expired, delta)
                        VALUES (NEW.platform, NEW.kind, NEW.expired, 1);
                    ELSIF TG_OP = 'DELETE' THEN
                        INSERT INTO installation_count_deltas (platform, kind, expired, delta)
                        VALUES (OLD.platform, OLD.kind, OLD.expired, -1);
                    ELSIF OLD.platform <> NEW.platform OR OLD.kind <> NEW.kind OR OLD.expired <> NEW.expired THEN
                        INSERT INTO installation_count_deltas (platform, kind, expired, delta)
                        VALUES (OLD.platform, OLD.kind, OLD.expired, -1), (NEW.platform, NEW.kind, NEW.expired, 1);
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE TRIGGER installation_counts_change AFTER INSERT OR DELETE OR UPDATE OF platform, kind, expired
                ON installations FOR EACH ROW EXECUTE FUNCTION hub_installation_count_delta()
                """,
            ]),
        .init(
            version: 15,
            statements: [
                // Receipts (SQLite's migration 14).
                """
                CREATE TABLE notification_receipts (
                    notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
                    installation_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    time DOUBLE PRECISION NOT NULL,
                    PRIMARY KEY (notification_id, installation_id, kind)
                )
                """,
                "ALTER TABLE secure_notifications ADD COLUMN notification_ids TEXT",
            ]),
    ]
}
