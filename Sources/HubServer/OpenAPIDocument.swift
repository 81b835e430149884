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
    `Authorization: SharedAccessSignature sr=...&sig=...&se=...&skn=...` (see `hub token`). Errors are JSON:
    `{"error": {"code": "...", "message": "..."}}`.
components:
  securitySchemes:
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
    apiVersion:
      name: api-version
      in: query
      required: false
      description: Accepted for Azure compatibility (2015-01 to 2020-06); ignored.
      schema: {type: string}
  schemas:
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
        expirationTime: {type: string, format: date-time, readOnly: true}
        lastUpdate: {type: string, format: date-time, readOnly: true}
        expiredPushChannel: {type: boolean, readOnly: true}
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
  responses:
    Error:
      description: A precise error.
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Error"}
security:
  - sas: []
paths:
  /healthz:
    get:
      summary: Liveness.
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
      summary: Create or replace an installation (Listen).
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
        "413": {$ref: "#/components/responses/Error"}
    patch:
      summary: Update an installation with JSON Patch (Listen).
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
        "404": {$ref: "#/components/responses/Error"}
    get:
      summary: Read an installation (Listen).
      responses:
        "200":
          description: The installation.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Installation"}
        "401": {$ref: "#/components/responses/Error"}
        "404": {$ref: "#/components/responses/Error"}
    delete:
      summary: Delete an installation (Listen); 204 also when absent.
      responses:
        "204": {description: Deleted.}
        "401": {$ref: "#/components/responses/Error"}
  /{hub}/installations:
    parameters:
      - $ref: "#/components/parameters/hub"
    get:
      summary: List installations matching a tag expression, with paging (Manage).
      parameters:
        - {name: tags, in: query, schema: {type: string}, description: "A tag expression such as (sports || news) && !muted"}
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
      - {name: direct, in: query, schema: {type: string}, description: "Present: send to ServiceBusNotification-DeviceHandle"}
      - {name: ServiceBusNotification-Format, in: header, required: true, schema: {type: string}}
      - {name: ServiceBusNotification-Tags, in: header, schema: {type: string}}
      - {name: ServiceBusNotification-DeviceHandle, in: header, schema: {type: string}}
      - {name: Idempotency-Key, in: header, schema: {type: string}}
    post:
      summary: Send a notification (Send). Platform headers (apns-*, X-WNS-*) pass through.
      requestBody:
        required: true
        content:
          application/json: {schema: {}}
          application/xml: {schema: {type: string}}
          application/octet-stream: {schema: {type: string}}
      responses:
        "201": {description: "Accepted; Location and TrackingId name the notification."}
        "400": {$ref: "#/components/responses/Error"}
        "401": {$ref: "#/components/responses/Error"}
        "403": {$ref: "#/components/responses/Error"}
        "413": {$ref: "#/components/responses/Error"}
  /{hub}/messages/{notificationId}:
    parameters:
      - $ref: "#/components/parameters/hub"
      - $ref: "#/components/parameters/notificationId"
      - $ref: "#/components/parameters/apiVersion"
    get:
      summary: A notification's state and outcome counts per platform (Send). XML when Accept asks for it.
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
      - {name: ServiceBusNotification-ScheduleTime, in: header, required: true, schema: {type: string, format: date-time}}
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
"""#
}
