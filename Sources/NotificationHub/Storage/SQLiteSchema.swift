extension SQLiteHubDatabase {
    /// The hub's schema, one versioned step after another. Never edit a released step; add a new one.
    public static let hubSchema: [Migration] = [
        .init(
            version: 1,
            statements: [
                """
                CREATE TABLE installations (
                    rid INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    platform TEXT NOT NULL,
                    push_channel TEXT NOT NULL,
                    channel_is_object INTEGER NOT NULL DEFAULT 0,
                    user_id TEXT,
                    tags TEXT NOT NULL,
                    templates TEXT,
                    expired INTEGER NOT NULL DEFAULT 0,
                    expiration_time REAL,
                    last_update REAL NOT NULL
                )
                """,
                "CREATE INDEX installations_platform ON installations(platform, rid)",
                """
                CREATE TABLE installation_tags (
                    tag TEXT NOT NULL,
                    rid INTEGER NOT NULL REFERENCES installations(rid) ON DELETE CASCADE,
                    scope INTEGER NOT NULL,
                    PRIMARY KEY (tag, rid, scope)
                ) WITHOUT ROWID
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
                    body BLOB NOT NULL,
                    headers TEXT NOT NULL,
                    audience TEXT NOT NULL,
                    state TEXT NOT NULL,
                    enqueue_time REAL NOT NULL,
                    scheduled_time REAL,
                    start_time REAL,
                    end_time REAL,
                    counts TEXT NOT NULL DEFAULT '{}',
                    cursor INTEGER,
                    lease_owner TEXT,
                    lease_expires REAL,
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
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
                    time REAL NOT NULL,
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
                    sealed_payload BLOB NOT NULL,
                    created_time REAL NOT NULL,
                    expires_time REAL NOT NULL,
                    read_once INTEGER NOT NULL,
                    read_time REAL
                )
                """,
                "CREATE INDEX secure_notifications_expiry ON secure_notifications(expires_time)",
            ]),
        .init(
            version: 5,
            statements: [
                "CREATE TABLE hub_positions (name TEXT PRIMARY KEY, value INTEGER NOT NULL)"
            ]),
        .init(
            version: 6,
            statements: [
                """
                CREATE TABLE notification_partitions (
                    notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
                    partition INTEGER NOT NULL,
                    lower_bound INTEGER,
                    upper_bound INTEGER,
                    cursor INTEGER,
                    state TEXT NOT NULL,
                    lease_owner TEXT,
                    lease_expires REAL,
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
                "ALTER TABLE notification_partitions ADD COLUMN claims INTEGER NOT NULL DEFAULT 0",
            ]),
        .init(
            version: 9,
            statements: [
                // Registrations (Azure's older model) are rows of the installations table: kind 0 is an
                // installation, 1 a native registration, 2 a template registration. `version` is the row's ETag,
                // `registration` the description's own fields (JSON), `created_time` Atom's `published`.
                "ALTER TABLE installations ADD COLUMN kind INTEGER NOT NULL DEFAULT 0",
                "ALTER TABLE installations ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
                "ALTER TABLE installations ADD COLUMN created_time REAL",
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
                    started_time REAL NOT NULL,
                    heartbeat_time REAL NOT NULL,
                    delivered INTEGER NOT NULL DEFAULT 0
                )
                """
            ]),
        .init(
            version: 11,
            statements: [
                // A device's push variables (JSON object of strings; NULL for none), for installations and
                // registrations alike.
                "ALTER TABLE installations ADD COLUMN push_variables TEXT",
                // The expiry sweep finds expired rows from this index; rows that never expire are not in it.
                "CREATE INDEX installations_expiration ON installations(expiration_time) WHERE expiration_time IS NOT NULL",
            ]),
        .init(
            version: 12,
            statements: [
                // Event webhooks: which subscription wants which event (written from `hub.yaml` at start), and the
                // outbox of events to post. The triggers write an event in the transaction that causes it, so an
                // accepted change never loses its event, whatever stops the process.
                """
                CREATE TABLE webhook_subscriptions (
                    subscription TEXT NOT NULL,
                    event TEXT NOT NULL,
                    PRIMARY KEY (subscription, event)
                ) WITHOUT ROWID
                """,
                """
                CREATE TABLE webhook_outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    subscription TEXT NOT NULL,
                    event TEXT NOT NULL,
                    created_time REAL NOT NULL,
                    data TEXT NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending',
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt REAL NOT NULL DEFAULT 0,
                    lease_owner TEXT,
                    lease_expires REAL,
                    delivered_time REAL,
                    last_status INTEGER,
                    last_error TEXT
                )
                """,
                "CREATE INDEX webhook_outbox_due ON webhook_outbox(state, next_attempt)",
                """
                CREATE TRIGGER webhook_notification_ended AFTER UPDATE OF state ON notifications
                WHEN NEW.state <> OLD.state AND NEW.state IN ('Completed', 'Abandoned', 'NoTargetFound', 'Cancelled')
                BEGIN
                    INSERT INTO webhook_outbox (subscription, event, created_time, data)
                    SELECT s.subscription, s.event,
                        COALESCE(NEW.end_time, (julianday('now') - 2440587.5) * 86400.0),
                        json_object(
                            'notificationId', NEW.id, 'state', NEW.state, 'reason', NEW.reason,
                            'enqueueTime', strftime('%Y-%m-%dT%H:%M:%fZ', NEW.enqueue_time, 'unixepoch'),
                            'endTime', strftime('%Y-%m-%dT%H:%M:%fZ', NEW.end_time, 'unixepoch'),
                            'counts', json(NEW.counts))
                    FROM webhook_subscriptions s WHERE s.event = 'notification.completed';
                END
                """,
                """
                CREATE TRIGGER webhook_notification_failed AFTER INSERT ON notification_failures
                BEGIN
                    INSERT INTO webhook_outbox (subscription, event, created_time, data)
                    SELECT s.subscription, s.event, NEW.time,
                        json_object(
                            'notificationId', NEW.notification_id,
                            'time', strftime('%Y-%m-%dT%H:%M:%fZ', NEW.time, 'unixepoch'),
                            'platform', NEW.platform, 'outcome', NEW.outcome, 'reason', NEW.reason,
                            'installationId', NEW.installation_id, 'pnsHandle', NEW.handle)
                    FROM webhook_subscriptions s
                    WHERE s.event = 'notification.failed'
                        OR (s.event = 'installation.channelExpired' AND NEW.outcome = 'ExpiredChannel'
                            AND NEW.installation_id IS NOT NULL);
                END
                """,
            ]),
        .init(
            version: 13,
            statements: [
                // Installation counts per platform, kind and expiry, kept by triggers so that a count never scans the
                // installations. SQLite has one writer, so the counters are updated in place;
                // `installation_count_deltas` (PostgreSQL's way, see its migration 14) stays empty here.
                """
                CREATE TABLE installation_counts (
                    platform TEXT NOT NULL,
                    kind INTEGER NOT NULL,
                    expired INTEGER NOT NULL,
                    n INTEGER NOT NULL,
                    PRIMARY KEY (platform, kind, expired)
                ) WITHOUT ROWID
                """,
                """
                CREATE TABLE installation_count_deltas (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    platform TEXT NOT NULL,
                    kind INTEGER NOT NULL,
                    expired INTEGER NOT NULL,
                    delta INTEGER NOT NULL
                )
                """,
                """
                INSERT INTO installation_counts (platform, kind, expired, n)
                SELECT platform, kind, expired, COUNT(*) FROM installations GROUP BY platform, kind, expired
                """,
                """
                CREATE TRIGGER installation_counts_insert AFTER INSERT ON installations
                BEGIN
                    INSERT INTO installation_counts (platform, kind, expired, n)
                    VALUES (NEW.platform, NEW.kind, NEW.expired, 1)
                    ON CONFLICT (platform, kind, expired) DO UPDATE SET n = n + 1;
                END
                """,
                """
                CREATE TRIGGER installation_counts_delete AFTER DELETE ON installations
                BEGIN
                    UPDATE installation_counts SET n = n - 1
                    WHERE platform = OLD.platform AND kind = OLD.kind AND expired = OLD.expired;
                END
                """,
                """
                CREATE TRIGGER installation_counts_update AFTER UPDATE OF platform, kind, expired ON installations
                WHEN OLD.platform <> NEW.platform OR OLD.kind <> NEW.kind OR OLD.expired <> NEW.expired
                BEGIN
                    UPDATE installation_counts SET n = n - 1
                    WHERE platform = OLD.platform AND kind = OLD.kind AND expired = OLD.expired;
                    INSERT INTO installation_counts (platform, kind, expired, n)
                    VALUES (NEW.platform, NEW.kind, NEW.expired, 1)
                    ON CONFLICT (platform, kind, expired) DO UPDATE SET n = n + 1;
                END
                """,
            ]),
        .init(
            version: 14,
            statements: [
                // Receipts devices report (delivered, opened, dismissed): one row per notification, installation
                // and kind, so a repeated report changes nothing; counted per platform by the notification's key.
                """
                CREATE TABLE notification_receipts (
                    notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
                    installation_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    time REAL NOT NULL,
                    PRIMARY KEY (notification_id, installation_id, kind)
                ) WITHOUT ROWID
                """,
                // The notifications that pushed a secure notification's id (JSON array), so that a device's fetch
                // counts as delivered for them.
                "ALTER TABLE secure_notifications ADD COLUMN notification_ids TEXT",
            ]),
    ]
}
