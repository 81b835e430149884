/// The OpenAPI 3.1 description of every endpoint, served at `/openapi.yaml`.
///
/// Kept as source so the executable carries it wherever it is installed; a test checks that it lists exactly the
/// routes ``HubAPI/routes`` declares.
public enum OpenAPIDocument {
    /// The document text.
    public static let yaml = #"""
openapi: 3.1.0
info:
  title: NotificationHub data-plane API
  version: "1.0"
  description: |
    Paths follow Azure Notification Hubs, so its clients work when pointed at this hub. Every hub endpoint needs
    `Authorization: SharedAccessSignature sr=...&sig=...&se=...&skn=...` (see `hub token`). Where a hub has
    `deviceAuthentication`, the single-installation and single-registration endpoints (and the listing of one
    handle's registrations) also accept `Authorization: Bearer <the app's user JWT>`: the device then registers as
    its user (docs/registering-devices.md). Errors, per-message telemetry and test-send outcomes are Azure's XML
    unless the request's `Accept` prefers JSON (`Accept: application/json`): an error is then
    `{"error": {"code": "...", "message": "..."}}`, and in XML `<Error><Code>{status}</Code><Detail>{message}</Detail>
    <ErrorCode>{code}</ErrorCode></Error>`.
components:
  securitySchemes:
    bearer: {type: http, scheme: bearer, bearerFormat: JWT}
    sas:
      type: apiKey
      in: header
      name: Authorization
  parameters:
    hub:
      name: hub
      in: path
      required: true
      schema: {type: string}
    installationId:
      name: installationId
      in: path
      required: true
      schema: {type: string}
    notificationId:
      name: notificationId
      in: path
      required: true
      schema: {type: string}
    registrationId:
      name: registrationId
      in: path
      required: true
      schema: {type: string}
    top:
      name: $top
      in: query
      schema: {type: integer, minimum: 1, maximum: 1000, default: 100}
    registrationContinuationToken:
      name: continuationtoken
      in: query
      description: The x-ms-continuationtoken of the previous page (any case of the name).
      schema: {type: string}
    apiVersion:
      name: api-version
      in: query
      required: false
      description: Accepted for Azure compatibility (2015-01 to 2020-06); ignored.
      schema: {type: string}
  schemas:
    LiveActivityChannel:
      type: object
      properties:
        tag: {type: string}
        channelId: {type: string, description: "The platform's channel id (base64), for ActivityKit's pushType .channel(id)."}
        environment: {type: string}
        messageStoragePolicy: {type: integer}
    Error:
      type: object
      required: [error]
      properties:
        error:
          type: object
          required: [code, message]
          properties:
            code: {type: string}
            message: {type: string}
    WebhookEvent:
      type: object
      properties:
        id: {type: string, description: "Unique in the hub; the same in every attempt and replay (the Hub-Webhook-Id header)."}
        subscription: {type: string}
        type: {type: string, enum: [notification.completed, notification.failed, installation.channelExpired, installation.channelReplaced]}
        time: {type: string, format: date-time}
        state: {type: string, enum: [pending, delivered, failed]}
        attempts: {type: integer}
        nextAttemptTime: {type: string, format: date-time}
        deliveredTime: {type: string, format: date-time}
        lastStatus: {type: integer, description: The receiver's last HTTP status.}
        lastError: {type: string}
        data: {type: object, description: The event's data as posted.}
    Template:
      type: object
      required: [body]
      properties:
        body: {type: string}
        headers: {type: object, additionalProperties: {type: string}}
        expiry: {type: string}
        tags: {type: array, items: {type: string}}
    Installation:
      type: object
      required: [installationId, platform, pushChannel]
      properties:
        installationId: {type: string}
        userId: {type: string}
        platform: {type: string, examples: [apns, fcmv1, gcm, wns]}
        pushChannel:
          oneOf:
            - {type: string}
            - {type: object}
        tags: {type: array, items: {type: string, pattern: "^[A-Za-z0-9_@#.:-]{1,120}$"}}
        templates: {type: object, additionalProperties: {$ref: "#/components/schemas/Template"}}
        pushVariables:
          type: object
          description: "Up to 32 device variables that fill $(name) in this device's templates when a send does not give them"
          additionalProperties: {type: string}
        expirationTime: {type: string, format: date-time, description: "When the hub deletes the installation; 9999-12-31T23:59:59.999Z for never"}
        lastUpdate: {type: string, format: date-time, readOnly: true}
        pushChannelExpired: {type: boolean, readOnly: true, description: "The platform reported the channel expired (the name Azure's SDKs read)"}
        expiredPushChannel: {type: boolean, readOnly: true, description: "The same flag under its documented name"}
    InstallationList:
      type: object
      properties:
        installations: {type: array, items: {$ref: "#/components/schemas/Installation"}}
        continuationToken: {type: string}
    PatchOperation:
      type: object
      required: [op, path]
      properties:
        op: {type: string, enum: [add, remove, replace]}
        path: {type: string}
        value: {}
    RegistrationEntry:
      type: string
      description: >-
        An Atom <entry> whose <content type="application/xml"> holds one description: Apple, Gcm, FcmV1, Windows or
        Browser RegistrationDescription or TemplateRegistrationDescription (docs/registrations.md).
      example: >-
        <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><AppleRegistrationDescription
        xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><Tags>a,b</Tags><DeviceToken>0F1E</DeviceToken></AppleRegistrationDescription></content></entry>
    NotificationOutcome:
      type: object
      properties:
        success: {type: integer}
        failure: {type: integer}
        results:
          type: array
          items:
            type: object
            properties:
              applicationPlatform: {type: string}
              pnsHandle: {type: string}
              registrationId: {type: string}
              outcome: {type: string}
              reason: {type: string}
    NotificationDetails:
      type: object
      properties:
        notificationId: {type: string}
        location: {type: string}
        state: {type: string, enum: [Enqueued, Scheduled, Processing, Completed, Abandoned, NoTargetFound, Cancelled]}
        enqueueTime: {type: string, format: date-time}
        scheduledTime: {type: string, format: date-time}
        startTime: {type: string, format: date-time}
        endTime: {type: string, format: date-time}
        format: {type: string}
        targetPlatforms: {type: array, items: {type: string}}
        outcomeCounts:
          type: object
          additionalProperties:
            type: array
            items:
              type: object
              properties:
                name: {type: string}
                count: {type: integer}
        traceId: {type: string, description: "The W3C trace id of the send, when the hub traces (observability.tracing). JSON only."}
        receiptCounts:
          type: object
          description: "Receipts devices reported (POST /{hub}/receipts), per platform: {delivered, opened, dismissed} counts. JSON only."
          additionalProperties:
            type: object
            additionalProperties: {type: integer}
    RecentNotificationList:
      type: object
      properties:
        notifications:
          type: array
          items:
            type: object
            properties:
              notificationId: {type: string}
              state: {type: string, enum: [Enqueued, Scheduled, Processing, Completed, Abandoned, NoTargetFound, Cancelled]}
              format: {type: string}
              audience: {type: string, enum: [all, tags, direct, unknown]}
              tags: {type: string, description: The tag expression of a tags audience.}
              platform: {type: string, description: The platform of a direct send.}
              handles: {type: integer, description: How many handles a direct send names.}
              enqueueTime: {type: string, format: date-time}
              scheduledTime: {type: string, format: date-time}
              startTime: {type: string, format: date-time}
              endTime: {type: string, format: date-time}
              outcomeCounts: {$ref: "#/components/schemas/NotificationDetails/properties/outcomeCounts"}
              reason: {type: string, description: Why it ended without being delivered, when it did.}
        continuationToken: {type: string}
    HubDescription:
      type: object
      properties:
        name: {type: string}
        configuration:
          type: object
          properties:
            loadedAt: {type: string, format: date-time}
        platforms: {type: array, items: {type: string}}
        formats: {type: array, items: {type: string}}
        adapters:
          type: array
          items:
            type: object
            properties:
              type: {type: string}
              platforms: {type: array, items: {type: string}}
              formats: {type: object, additionalProperties: {type: array, items: {type: string}}}
              templateFormats: {type: object, additionalProperties: {type: string}}
              maximumPayloadBytes: {type: integer}
              samples:
                type: object
                description: For each native format, a sample notification the console offers.
                additionalProperties:
                  type: object
                  properties:
                    body: {type: string}
                    headers: {type: object, additionalProperties: {type: string}}
                    contentType: {type: string}
              state:
                type: string
                enum: [idle, delivering, failing]
                description: "idle: no delivery in the last recentSeconds; failing: platform-side failures (InvalidCredentials, PnsUnavailable, PnsUnreachable, Throttled, Abandoned) outnumber the other outcomes; delivering otherwise."
              recentOutcomes: {type: object, additionalProperties: {type: integer}}
              lastDeliveryTime: {type: string, format: date-time}
        keys:
          type: array
          items:
            type: object
            properties:
              name: {type: string}
              rights: {type: array, items: {type: string, enum: [Listen, Send, Manage]}}
              hasSecondaryKey: {type: boolean}
        limits: {type: object, additionalProperties: {type: integer}}
        delivery: {type: object}
        storage:
          type: object
          properties:
            kind: {type: string, enum: [sqlite, memory, postgres]}
            path: {type: string}
            host: {type: string}
            database: {type: string}
            schema: {type: string}
        securePush: {type: boolean}
        feedbackWebhook: {type: boolean}
        recentSeconds: {type: integer}
  responses:
    RegistrationFeed:
      description: "An Atom feed of registrations; x-ms-continuationtoken names the next page."
      headers:
        x-ms-continuationtoken: {schema: {type: string}}
      content:
        application/atom+xml:
          schema: {type: string, description: "<feed> of <entry> elements, each as RegistrationEntry"}
    Error:
      description: A precise error (Azure's XML unless Accept prefers JSON).
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Error"}
        application/xml:
          schema: {type: string, description: "<Error><Code>{status}</Code><Detail>{message}</Detail><ErrorCode>{code}</ErrorCode></Error>"}
    StoreFull:
      description: >-
        The hub's store refused the write because its disk is full (SQLite SQLITE_FULL, PostgreSQL 53100 disk_full);
        nothing was stored; code StoreFull. Retry after freeing space.
      headers:
        Retry-After: {schema: {type: integer}, description: Seconds after which to retry.}
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Error"}
    TooManyRequests:
      description: >-
        Too many installation or registration writes by this device user or key (limits.installationWrites); code
        TooManyRequests.
      headers:
        Retry-After: {schema: {type: integer}, description: Seconds after which a write is allowed again.}
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Error"}
security:
  - sas: []
paths:
  /healthz:
    get:
      summary: "Liveness, and the running configuration: its file's SHA-256, when it was loaded, the last reload (result, time, problem count, parts waiting for a restart). No secret. status is degraded while a hub's store refuses writes for want of disk space; stores then lists those hubs (since, lastRefusal, reason)."
      security: []
      responses:
        "200": {description: The hub is up.}
  /metrics:
    get:
      summary: Prometheus metrics.
      security: []
      responses:
        "200": {description: Metrics in the Prometheus text format.}
  /openapi.yaml:
    get:
      summary: This document.
      security: []
      responses:
        "200": {description: The OpenAPI document.}
  /{hub}/installations/{installationId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/installationId"
      - $ref: "#/components/parameters/apiVersion"
    put:
      summary: >-
        Create or replace an installation (Listen, or a device user's JWT: userId is the token's user, user-bound tags
        must name that user, another user's installation id is 409).
      security: [{sas: []}, {bearer: []}]
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Installation"}
      responses:
        "200":
          description: Stored.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Installation"}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "409": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
        "503": {$ref: "#/components/responses/StoreFull"}
    patch:
      summary: Update an installation with JSON Patch (Listen, or a device user's JWT; another user's installation is 404).
      security: [{sas: []}, {bearer: []}]
      requestBody:
        required: true
        content:
          application/json-patch+json:
            schema: {type: array, items: {$ref: "#/components/schemas/PatchOperation"}}
      responses:
        "200":
          description: Updated.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Installation"}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
    get:
      summary: Read an installation (Listen, or a device user's JWT; another user's installation is 404).
      security: [{sas: []}, {bearer: []}]
      responses:
        "200":
          description: The installation.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Installation"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
    delete:
      summary: >-
        Delete an installation (Listen, or a device user's JWT); 204 also when absent or another user's (which is left
        in place).
      security: [{sas: []}, {bearer: []}]
      responses:
        "204": {description: Deleted.}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
  /{hub}/installations/{installationId}/liveactivities:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/installationId"
    get:
      summary: >-
        The Live Activity tokens registered under an apns installation: its push-to-start token and its activities
        (Listen, or a device user's JWT; another user's installation is 404).
      security: [{sas: []}, {bearer: []}]
      responses:
        "200":
          description: "{installationId, pushToStart (absent when none), activities: [{activityId, pushToken, attributesType, tags, pushChannelExpired, lastUpdate}]}"
          content:
            application/json: {schema: {type: object}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/installations/{installationId}/liveactivities/pushtostart:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/installationId"
    put:
      summary: >-
        Register the app's push-to-start token (ActivityKit's pushToStartTokenUpdates) under its apns installation
        (Listen, or a device user's JWT; the installation must be the caller's: otherwise 404). Body
        {"pushToken":"<hex>"}. An activity's update token given here is a 400.
      security: [{sas: []}, {bearer: []}]
      requestBody:
        required: true
        content:
          application/json: {schema: {type: object, required: [pushToken], properties: {pushToken: {type: string}}}}
      responses:
        "200":
          description: Stored.
          content:
            application/json: {schema: {type: object}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
        "503": {$ref: "#/components/responses/StoreFull"}
    delete:
      summary: Remove the installation's push-to-start token (Listen, or a device user's JWT); 204 also when none was registered.
      security: [{sas: []}, {bearer: []}]
      responses:
        "204": {description: Removed.}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
  /{hub}/installations/{installationId}/liveactivities/{activityId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/installationId"
      - {name: activityId, in: path, required: true, schema: {type: string, pattern: "^[A-Za-z0-9._-]{1,64}$"}}
    put:
      summary: >-
        Register one Live Activity's update token (activity.pushTokenUpdates) under the app's apns installation
        (Listen, or a device user's JWT; the installation must be the caller's: otherwise 404). Body
        {"pushToken":"<hex>","attributesType":"MatchAttributes","tags":["match:1234"]} (tags optional, user-tag
        rules). The row carries $ActivityId:{activityId}. The push-to-start token given here is a 400; more than 32
        activities on one installation a 409.
      security: [{sas: []}, {bearer: []}]
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [pushToken, attributesType]
              properties:
                pushToken: {type: string}
                attributesType: {type: string}
                tags: {type: array, items: {type: string}}
      responses:
        "200":
          description: Stored.
          content:
            application/json: {schema: {type: object}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "409": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
        "503": {$ref: "#/components/responses/StoreFull"}
    delete:
      summary: Remove one activity's update token (Listen, or a device user's JWT); 204 also when it was not registered.
      security: [{sas: []}, {bearer: []}]
      responses:
        "204": {description: Removed.}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
  /{hub}/liveactivities/messages:
    parameters:
      - $ref: "#/components/parameters/hub"
    post:
      summary: >-
        Start, update or end Live Activities (Send). The hub builds the aps payload (timestamp: its clock at accept,
        or the scheduled time), sends it with apns-push-type liveactivity: a start to the push-to-start tokens of the
        devices tags matches (format liveactivitystart), an update or end to the activity tokens activityId or tags
        matches (format liveactivity). Telemetry at /{hub}/messages/{id} as for any send.
      parameters:
        - {name: Idempotency-Key, in: header, schema: {type: string}}
        - {name: traceparent, in: header, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [event]
              properties:
                event: {type: string, enum: [start, update, end]}
                activityId: {type: string, description: "update and end only; or tags"}
                tags: {type: string, description: "A tag expression; or activityId"}
                contentState: {type: object, description: "required for start and update"}
                attributesType: {type: string, description: "start only, required"}
                attributes: {type: object, description: "start only, required"}
                alert: {type: object}
                staleDate: {type: integer, description: UNIX seconds}
                dismissalDate: {type: integer, description: UNIX seconds}
                relevanceScore: {type: number}
                priority: {type: integer, enum: [5, 10], default: 10}
                inputPushToken: {type: boolean, description: start only}
                scheduledTime: {type: string, format: date-time}
      responses:
        "201": {description: "Accepted; Location and TrackingId name the notification (under schedulednotifications when scheduled)."}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
        "503": {$ref: "#/components/responses/StoreFull"}
  /{hub}/installations:
    parameters:
      - $ref: "#/components/parameters/hub"
    get:
      summary: List installations matching a tag expression, with paging (Manage).
      parameters:
        - {name: tags, in: query, schema: {type: string}, description: "A tag expression such as (sports || news) && !muted; a space may be sent as %20 or, form-encoded, as +"}
        - {name: top, in: query, schema: {type: integer, minimum: 1, maximum: 1000, default: 100}}
        - {name: continuationToken, in: query, schema: {type: string}}
      responses:
        "200":
          description: A page.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/InstallationList"}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/messages:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/apiVersion"
    get:
      summary: The hub's notifications, newest first, with their state and outcome counts so far (Manage).
      parameters:
        - {name: top, in: query, schema: {type: integer, minimum: 1, maximum: 1000, default: 50}}
        - {name: continuationToken, in: query, schema: {type: string}}
      responses:
        "200":
          description: "One page; continuationToken (also the x-ms-continuationtoken header) names the next."
          content:
            application/json:
              schema: {$ref: "#/components/schemas/RecentNotificationList"}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
    post:
      summary: Send a notification (Send). Platform headers (apns-*, X-WNS-*) pass through.
      parameters:
        - {name: direct, in: query, schema: {type: string}, description: "Present: send to ServiceBusNotification-DeviceHandle"}
        - {name: test, in: query, schema: {type: string}, description: "Present: deliver now to at most 10 devices and return each outcome"}
        - {name: ServiceBusNotification-Format, in: header, required: true, schema: {type: string}}
        - {name: ServiceBusNotification-Tags, in: header, schema: {type: string}}
        - {name: ServiceBusNotification-DeviceHandle, in: header, schema: {type: string}}
        - {name: Idempotency-Key, in: header, schema: {type: string}}
        - {name: traceparent, in: header, description: "W3C Trace Context of the sender's span; with observability.tracing the accept span continues it, and the 201 answers the accept span's traceparent. Never passed to platforms.", schema: {type: string}}
        - {name: tracestate, in: header, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json: {schema: {}}
          application/xml: {schema: {type: string}}
          application/octet-stream: {schema: {type: string}}
      responses:
        "201":
          description: "Accepted; Location and TrackingId name the notification. With ?test: the per-device outcomes."
          content:
            application/json:
              schema: {$ref: "#/components/schemas/NotificationOutcome"}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
        "503": {$ref: "#/components/responses/StoreFull"}
  /{hub}/configuration:
    parameters:
      - $ref: "#/components/parameters/hub"
    get:
      summary: "The running configuration as `hub validate --running` compares a file with it: the file's SHA-256, when it was loaded, the last reload, and a digest of every part (Manage). Digests only, no setting or secret."
      responses:
        "200":
          description: The running configuration's digests.
          content:
            application/json:
              schema: {type: object}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/description:
    parameters:
      - $ref: "#/components/parameters/hub"
    get:
      summary: "What the hub runs with, without secrets: platforms, formats, adapters and their state, key names and rights, limits, delivery settings, storage, when the configuration was loaded (Manage)."
      responses:
        "200":
          description: The description.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/HubDescription"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/rates:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: seconds, in: query, schema: {type: integer, minimum: 1, maximum: 3600, default: 3600}, description: The span, ending with the last complete second.}
      - {name: step, in: query, schema: {type: integer, minimum: 1, default: 1}, description: Seconds summed into each count (at most seconds).}
    get:
      summary: "Deliveries per platform and outcome in each step of the last hour, counted by this hub process as fan-outs commit their progress (the counts of hub_notifications_delivered_total; empty after a restart) (Manage)."
      responses:
        "200":
          description: The series.
          content:
            application/json:
              schema:
                type: object
                properties:
                  end: {type: string, format: date-time, description: The end of the last step (exclusive).}
                  seconds: {type: integer}
                  step: {type: integer}
                  series:
                    type: array
                    items:
                      type: object
                      properties:
                        platform: {type: string}
                        outcome: {type: string}
                        counts: {type: array, items: {type: integer}, description: "Deliveries per step, oldest first; divide by step for per second."}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/nodes:
    parameters:
      - $ref: "#/components/parameters/hub"
    get:
      summary: "The hub processes (nodes) working for the hub now, from their heartbeats in the hub's database; a node that stopped heartbeating for 10 s is no longer listed (Manage)."
      responses:
        "200":
          description: The live nodes.
          content:
            application/json:
              schema:
                type: object
                properties:
                  node: {type: string, description: The name of the node that answered.}
                  nodes:
                    type: array
                    items:
                      type: object
                      properties:
                        id: {type: string, description: "The node's lease owner: its name and a suffix unique to its run."}
                        name: {type: string}
                        startedTime: {type: string, format: date-time}
                        heartbeatTime: {type: string, format: date-time}
                        delivered: {type: integer, description: Deliveries the node committed since it started, as of its last heartbeat.}
                        partitions: {type: integer, description: Partitions of notifications the node holds a lease on now.}
                        current: {type: boolean, description: Whether this is the node that answered.}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/receipts:
    parameters:
      - $ref: "#/components/parameters/hub"
    post:
      summary: "A device reports a notification `delivered`, `opened` or `dismissed` on one of its installations (the Listen key, or the device user's bearer token for the user's own installations). Idempotent per notification, installation and kind; 30 a minute per installation (10 at once) and 2,000 a second per hub. An unknown notification, one not sent to the installation and an installation the caller does not reach get the same 404 ReceiptRefused."
      security: [{sas: []}, {bearer: []}]
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [notificationId, installationId, kind]
              properties:
                notificationId: {type: string}
                installationId: {type: string}
                kind: {type: string, enum: [delivered, opened, dismissed]}
      responses:
        "201":
          description: The receipt was recorded.
          content:
            application/json: {schema: {type: object, properties: {recorded: {type: boolean}}}}
        "200":
          description: The device reported this kind before; nothing changed.
          content:
            application/json: {schema: {type: object, properties: {recorded: {type: boolean}}}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/Error"}
  /{hub}/installationcounts:
    parameters:
      - $ref: "#/components/parameters/hub"
    get:
      summary: "Installation and registration counts, in total and per platform, from counters the store keeps (no scan); for each `tags` expression, the audience a send to it reaches now (installations and registrations whose channel has not expired), from the tag index (Manage)."
      parameters:
        - {name: tags, in: query, description: "A tag expression; repeat for up to 10.", schema: {type: array, items: {type: string}}, style: form, explode: true}
      responses:
        "200":
          description: The counts.
          content:
            application/json:
              schema:
                type: object
                properties:
                  installations: {type: integer, description: Installations, expired ones included.}
                  expired: {type: integer}
                  registrations: {type: integer}
                  platforms:
                    type: array
                    items:
                      type: object
                      properties:
                        platform: {type: string}
                        installations: {type: integer}
                        expired: {type: integer}
                        registrations: {type: integer}
                  tags:
                    type: array
                    items:
                      type: object
                      properties:
                        expression: {type: string}
                        audience: {type: integer}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/liveactivities/channels:
    parameters:
      - $ref: "#/components/parameters/hub"
    post:
      summary: "Creates a broadcast channel for one tag at the platform (Apple's broadcast push for Live Activities, iOS 18) and stores it, so a liveactivity send to the tag is one broadcast for the channel (Manage). 409 ChannelExists when the tag has one; 404 ChannelManagementUnavailable when no adapter manages channels."
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [tag]
              properties:
                tag: {type: string, description: "One user tag (no expression, no $ system tag), e.g. match:1234."}
                environment: {type: string, enum: [production, sandbox], description: "Default: the adapter's first environment."}
                messageStoragePolicy: {type: integer, enum: [0, 1], description: "0 No Message Stored (default), 1 Most Recent Message Stored."}
      responses:
        "201": {description: The channel., content: {application/json: {schema: {$ref: "#/components/schemas/LiveActivityChannel"}}}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "409": {$ref: "#/components/responses/Error"}
        "502": {$ref: "#/components/responses/Error"}
        "503": {$ref: "#/components/responses/Error"}
    get:
      summary: "Every broadcast channel of the hub, by tag (Manage)."
      responses:
        "200":
          description: The channels.
          content:
            application/json:
              schema:
                type: object
                properties:
                  channels: {type: array, items: {$ref: "#/components/schemas/LiveActivityChannel"}}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/liveactivities/channels/{tag}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: tag, in: path, required: true, schema: {type: string}}
    get:
      summary: "The channel of a tag: the id an app subscribes to with ActivityKit (any key, or the app's bearer JWT). 404 ChannelNotFound."
      security: [{sas: []}, {bearer: []}]
      responses:
        "200": {description: The channel., content: {application/json: {schema: {$ref: "#/components/schemas/LiveActivityChannel"}}}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
    delete:
      summary: "Deletes the tag's channel at the platform, then the hub's record of it (Manage)."
      responses:
        "204": {description: Deleted.}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "502": {$ref: "#/components/responses/Error"}
        "503": {$ref: "#/components/responses/Error"}
  /{hub}/webhooks/events:
    parameters:
      - $ref: "#/components/parameters/hub"
    get:
      summary: "The hub's webhook outbox, newest first (Manage): every event written for a subscription in `webhooks:`, with its delivery state. See docs/webhooks.md."
      parameters:
        - {name: state, in: query, schema: {type: string, enum: [pending, delivered, failed]}}
        - {name: before, in: query, description: "The `before` of the previous page.", schema: {type: string}}
        - {name: top, in: query, schema: {type: integer, minimum: 1, maximum: 500, default: 50}}
      responses:
        "200":
          description: A page of events.
          content:
            application/json:
              schema:
                type: object
                properties:
                  events: {type: array, items: {$ref: "#/components/schemas/WebhookEvent"}}
                  before: {type: string, description: Pass as `before` for the next page; absent on the last page.}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/webhooks/events/{eventId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: eventId, in: path, required: true, schema: {type: string}}
    get:
      summary: One webhook event and its delivery state (Manage).
      responses:
        "200":
          description: The event.
          content:
            application/json: {schema: {$ref: "#/components/schemas/WebhookEvent"}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/webhooks/events/{eventId}/replay:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: eventId, in: path, required: true, schema: {type: string}}
    post:
      summary: "Posts a webhook event again (Manage): it becomes pending at once with a fresh count of attempts, whatever its state; the receiver gets the same id and body with a new timestamp and signature."
      responses:
        "202":
          description: The event, pending.
          content:
            application/json: {schema: {$ref: "#/components/schemas/WebhookEvent"}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "409": {$ref: "#/components/responses/Error"}
  /{hub}/messages/$batch:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/apiVersion"
      - {name: direct, in: query, required: true, schema: {type: string}}
      - {name: ServiceBusNotification-Format, in: header, required: true, schema: {type: string}}
    post:
      summary: "Send one notification to up to 1000 device handles (Send): a multipart/mixed body with a `notification` part (the payload) and a `devices` part (a JSON array of handles)."
      requestBody:
        required: true
        content:
          multipart/mixed: {schema: {type: string}}
      responses:
        "201": {description: "Accepted; Location and TrackingId name the notification."}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
  /{hub}/messages/{notificationId}/feedback:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/notificationId"
      - {name: top, in: query, schema: {type: integer, minimum: 1, maximum: 10000, default: 1000}}
      - {name: continuationToken, in: query, schema: {type: string}}
    get:
      summary: The devices a notification failed to reach (time, platform, outcome, reason, installation, handle), oldest first (Send).
      responses:
        "200":
          description: One page of failures.
          content:
            application/json:
              schema:
                type: object
                properties:
                  failures:
                    type: array
                    items:
                      type: object
                      properties:
                        time: {type: string, format: date-time}
                        platform: {type: string}
                        outcome: {type: string}
                        reason: {type: string}
                        installationId: {type: string}
                        pnsHandle: {type: string}
                  continuationToken: {type: string}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/messages/{notificationId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/notificationId"
      - $ref: "#/components/parameters/apiVersion"
    get:
      summary: A notification's state and outcome counts per platform (Send). Azure's NotificationDetails XML unless Accept prefers JSON.
      responses:
        "200":
          description: Telemetry.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/NotificationDetails"}
            application/xml: {schema: {type: string}}
        "401": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/schedulednotifications:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: ServiceBusNotification-ScheduleTime, in: header, required: true, schema: {type: string}, description: "ISO 8601 date and time; without a zone it is UTC (Azure's .NET SDK writes yyyy-MM-ddTHH:mm:ss)"}
      - {name: ServiceBusNotification-Format, in: header, required: true, schema: {type: string}}
      - {name: ServiceBusNotification-Tags, in: header, schema: {type: string}}
    post:
      summary: Schedule a notification (Send).
      requestBody:
        required: true
        content:
          application/json: {schema: {}}
      responses:
        "201": {description: Scheduled.}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
  /{hub}/schedulednotifications/{notificationId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/notificationId"
    delete:
      summary: Cancel a scheduled notification that has not started (Send).
      responses:
        "200": {description: Cancelled.}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/securenotifications:
    parameters:
      - $ref: "#/components/parameters/hub"
    post:
      summary: "Store a sensitive payload in the hub and push only its id to every matching device (Send)."
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [payload]
              properties:
                payload: {description: Any JSON value; never sent through a platform.}
                tags: {type: string, description: "A tag expression, e.g. username:alice (or give userId)"}
                userId: {type: string}
                timeToLiveSeconds: {type: number}
                readOnce: {type: boolean}
      responses:
        "201":
          description: Stored and announced.
          content:
            application/json:
              schema:
                type: object
                properties:
                  id: {type: string}
                  notificationIds: {type: array, items: {type: string}}
                  expiresAt: {type: string, format: date-time}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/securenotifications/{secureId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: secureId, in: path, required: true, schema: {type: string}}
    get:
      summary: "Fetch a secure payload with the app's bearer JWT; 404 unless the token's user is in the audience. With `installationId` (an installation of the token's user) the fetch is that device's `delivered` receipt for the notifications that pushed the id."
      parameters:
        - {name: installationId, in: query, schema: {type: string}}
      security: [{bearer: []}]
      responses:
        "200":
          description: The payload; marked read (deleted when read-once).
          content:
            application/json:
              schema:
                type: object
                properties:
                  id: {type: string}
                  payload: {}
                  createdAt: {type: string, format: date-time}
        "401": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /{hub}/registrationIDs:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/apiVersion"
    post:
      summary: Issue a new registration id without storing anything (Listen, or a device user's JWT).
      security: [{sas: []}, {bearer: []}]
      responses:
        "201":
          description: "The id is the last segment of Location: .../{hub}/registrationids/{id}."
          headers:
            Location: {schema: {type: string}}
            Content-Location: {schema: {type: string}}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/registrationids:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/apiVersion"
    post:
      summary: The same as /{hub}/registrationIDs, spelled as the .NET SDK sends it (Listen, or a device user's JWT).
      security: [{sas: []}, {bearer: []}]
      responses:
        "201":
          description: "The id is the last segment of Location."
          headers:
            Location: {schema: {type: string}}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/registrations:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/apiVersion"
    post:
      summary: >-
        Create a registration under a new id (Listen, or a device user's JWT: the registration is the user's). See
        docs/registrations.md for the descriptions.
      security: [{sas: []}, {bearer: []}]
      requestBody:
        required: true
        content:
          application/atom+xml: {schema: {$ref: "#/components/schemas/RegistrationEntry"}}
      responses:
        "200":
          description: The stored registration.
          headers:
            ETag: {schema: {type: string}, description: 'Weak ETag, W/"1"'}
            Content-Location: {schema: {type: string}}
          content:
            application/atom+xml: {schema: {$ref: "#/components/schemas/RegistrationEntry"}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "409": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
    get:
      summary: >-
        List registrations, including read-only projections of installations. With $filter (the registrations of one
        handle) Listen or a device user's JWT suffices (the user sees only their own); without, Manage is needed.
      security: [{sas: []}, {bearer: []}]
      parameters:
        - name: $filter
          in: query
          schema: {type: string}
          description: "ChannelUri eq '...', or the handle elements of a registration format the hub's adapters declare (DeviceToken eq '...', GcmRegistrationId eq '...', FcmV1RegistrationId eq '...', Endpoint eq '...' and P256DH eq '...' and Auth eq '...')"
        - $ref: "#/components/parameters/top"
        - $ref: "#/components/parameters/registrationContinuationToken"
      responses:
        "200": {$ref: "#/components/responses/RegistrationFeed"}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/registrations/{registrationId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/registrationId"
      - $ref: "#/components/parameters/apiVersion"
    put:
      summary: >-
        Create or replace a registration (Listen, or a device user's JWT; another user's registration id is 409); with
        If-Match, only if its ETag matches (or * for any).
      security: [{sas: []}, {bearer: []}]
      parameters:
        - {name: If-Match, in: header, schema: {type: string}, description: 'An ETag such as "3" or W/"3", or *'}
      requestBody:
        required: true
        content:
          application/atom+xml: {schema: {$ref: "#/components/schemas/RegistrationEntry"}}
      responses:
        "200":
          description: The stored registration.
          headers:
            ETag: {schema: {type: string}}
          content:
            application/atom+xml: {schema: {$ref: "#/components/schemas/RegistrationEntry"}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "409": {$ref: "#/components/responses/Error"}
        "412": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
    get:
      summary: Read a registration or an installation's projection (Listen, or a device user's JWT; another user's is 404).
      security: [{sas: []}, {bearer: []}]
      responses:
        "200":
          description: The registration.
          headers:
            ETag: {schema: {type: string}}
          content:
            application/atom+xml: {schema: {$ref: "#/components/schemas/RegistrationEntry"}}
        "401": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
    delete:
      summary: >-
        Delete a registration (Listen, or a device user's JWT; another user's is 404); with If-Match, only if its
        ETag matches.
      security: [{sas: []}, {bearer: []}]
      parameters:
        - {name: If-Match, in: header, schema: {type: string}}
      responses:
        "200": {description: Deleted.}
        "401": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
        "409": {$ref: "#/components/responses/Error"}
        "412": {$ref: "#/components/responses/Error"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
  /{hub}/tags/{tag}/registrations:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: tag, in: path, required: true, schema: {type: string}}
      - $ref: "#/components/parameters/apiVersion"
    get:
      summary: List the registrations carrying a tag, including projections of installations (Manage).
      parameters:
        - $ref: "#/components/parameters/top"
        - $ref: "#/components/parameters/registrationContinuationToken"
      responses:
        "200": {$ref: "#/components/responses/RegistrationFeed"}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /:
    get:
      summary: "The namespace's hubs, as Azure's NamespaceManager.GetNotificationHubsAsync reads them: an Atom feed with one entry per hub whose Manage key signed the token. Sign sr = the namespace URL (https://host/) with a hub's key."
      responses:
        "200":
          description: An Atom feed of NotificationHubDescription entries.
          content:
            application/atom+xml: {schema: {type: string}}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/apiVersion"
    get:
      summary: "The hub as Azure's NotificationHubDescription Atom entry (NamespaceManager.GetNotificationHubAsync): its name and registration lifetime, no keys or credentials (Manage)."
      responses:
        "200":
          description: An Atom entry.
          content:
            application/atom+xml: {schema: {type: string}}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
    put:
      summary: "Refused: hubs are defined in hub.yaml (409 HubDefinedInConfiguration) (Manage)."
      responses:
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "409": {$ref: "#/components/responses/Error"}
    delete:
      summary: "Refused: hubs are defined in hub.yaml (405 HubDefinedInConfiguration, Allow: GET) (Manage)."
      responses:
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "405": {$ref: "#/components/responses/Error"}
  /{hub}/feedbackcontainer:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/apiVersion"
    get:
      summary: "The URL of the hub's PNS feedback container, with a read-and-list token valid for an hour (NotificationHubClient.GetFeedbackContainerUriAsync). The container holds one blob per UTC day, named MMddyyyy, one <PnsFeedback> element per line (docs/operations-api.md) (Manage)."
      responses:
        "200":
          description: The container URL.
          content:
            text/plain: {schema: {type: string}}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/containers/{container}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: container, in: path, required: true, schema: {type: string, pattern: "^[a-z0-9](-?[a-z0-9])+$", minLength: 3, maxLength: 63}}
    get:
      summary: "Creates a job container of the hub if it is missing and answers its URL, with a read, write and list token valid for a day: where import files are uploaded and job results written (Manage)."
      responses:
        "200":
          description: The container URL.
          content:
            text/plain: {schema: {type: string}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/jobs:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/apiVersion"
    post:
      summary: "Submits a bulk registration job (NotificationHubClient.SubmitNotificationHubJobAsync): an Atom entry with a NotificationHubJob of Type ExportRegistrations, ImportCreateRegistrations, ImportUpdateRegistrations, ImportUpsertRegistrations or ImportDeleteRegistrations. OutputContainerUri must be a container URL of this hub allowing writes, ImportFileUri a blob in such a container; any other URL is refused (400 InvalidContainerUri) (Manage)."
      requestBody:
        required: true
        content:
          application/atom+xml: {schema: {type: string}}
      responses:
        "201":
          description: The job as an Atom entry; Location is its URL.
          content:
            application/atom+xml: {schema: {type: string}}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
    get:
      summary: The hub's jobs, oldest first, as an Atom feed of NotificationHubJob entries (Manage).
      responses:
        "200":
          description: An Atom feed.
          content:
            application/atom+xml: {schema: {type: string}}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /{hub}/jobs/{jobId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - {name: jobId, in: path, required: true, schema: {type: string}}
      - $ref: "#/components/parameters/apiVersion"
    get:
      summary: "A job's state: Status (Started, Running, Completed, Failed), Progress, Failure, and OutputProperties naming the OutputFilePath and FailedFilePath blobs (Manage)."
      responses:
        "200":
          description: An Atom entry.
          content:
            application/atom+xml: {schema: {type: string}}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
  /blobs/{container}:
    parameters:
      - {name: container, in: path, required: true, description: "<hub>.<container>, as in the URL the hub issued.", schema: {type: string}}
      - {name: restype, in: query, required: true, schema: {const: container}}
      - {name: comp, in: query, required: true, schema: {const: list}}
      - {name: prefix, in: query, schema: {type: string}}
      - {name: sig, in: query, required: true, description: "The container token's signature; with sv, sr, sp and se as the hub issued them.", schema: {type: string}}
    get:
      summary: "Lists a container's blobs as Azure Blob Storage does (EnumerationResults XML). Authorized by the container URL's token (l), not by an Authorization header."
      security: []
      responses:
        "200":
          description: EnumerationResults.
          content:
            application/xml: {schema: {type: string}}
        "400": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
  /blobs/{container}/{blob}:
    parameters:
      - {name: container, in: path, required: true, description: "<hub>.<container>, as in the URL the hub issued.", schema: {type: string}}
      - {name: blob, in: path, required: true, schema: {type: string, pattern: "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$"}}
      - {name: sig, in: query, required: true, description: "The container token's signature; with sv, sr, sp and se as the hub issued them.", schema: {type: string}}
    get:
      summary: Reads a blob. Authorized by the container URL's token (r).
      security: []
      responses:
        "200":
          description: The blob.
          content:
            application/octet-stream: {schema: {type: string, format: binary}}
        "403": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
    put:
      summary: "Writes a blob whole (a BlockBlob upload in one request, up to 64 MiB), e.g. a job's import file. Authorized by the container URL's token (w); the feedback container is read-only."
      security: []
      requestBody:
        required: true
        content:
          application/octet-stream: {schema: {type: string, format: binary}}
      responses:
        "201": {description: Written.}
        "400": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
"""#
}
