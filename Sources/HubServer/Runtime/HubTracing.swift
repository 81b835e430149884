import Foundation
import HTTPTypes
import Logging
import NotificationHub
import OTel
import ServiceLifecycle
import Tracing

/// Builds the hub's tracer from `observability.tracing`: an OTLP/HTTP (protobuf) exporter behind a batch span
/// processor, with W3C trace context propagation. The tracer is handed to the hubs (``DeliveryTracing``), not
/// bootstrapped process-wide; its service exports until graceful shutdown and flushes what is left.
enum HubTracing {
    /// The tracing of the hubs and the service that exports its spans.
    static func make(_ settings: TracingConfiguration, logger: Logger) throws -> (tracing: DeliveryTracing, service: any Service) {
        var configuration = OTel.Configuration.default
        configuration.serviceName = settings.serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.endpoint = settings.endpoint.absoluteString
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.traces.otlpExporter.headers = settings.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        // A sender's own sampling decision (the traceparent's flag) is kept; a send without one is traced at
        // `sendSampleRatio` (by trace id), and everything the worker does for it follows that decision.
        configuration.traces.sampler = .parentBasedTraceIDRatio(ratio: settings.sendSampleRatio) ?? .parentBasedAlwaysOn
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        configuration.propagators = [.traceContext]
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        return (DeliveryTracing(tracer: backend.factory, batchSampleRatio: settings.batchSampleRatio), backend.service)
    }
}

/// Reads W3C trace headers from a request.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { carrier[$0] }
    }
}
