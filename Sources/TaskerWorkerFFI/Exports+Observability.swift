import Foundation
import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerWorker

// `tasker_worker.h`: in-process domain events, observability, logging.

@_cdecl("tasker_poll_in_process_event")
public func tasker_poll_in_process_event(
    _ timeoutMs: Int32, _ eventJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    withStringOutput(eventJSON, "event_json") { () throws(FFIError) in
        let timeout = try pollTimeout(timeoutMs)
        let inbox = try EmbeddedWorkerSlot.current(serving: true).domainEvents
        let event = try FFICall.blocking { () async throws(FFIError) in await inbox.poll(timeout: timeout) }
        return try event.map { text throws(FFIError) in try CStrings.copy(text) }
    }
}

@_cdecl("tasker_health")
public func tasker_health(_ healthJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withStringOutput(healthJSON, "health_json") { () throws(FFIError) in
        let runtime = try EmbeddedWorkerSlot.current().daemon.runtime
        let body = try FFICall.blocking { () async throws(FFIError) in
            await WorkerHealthService(runtime: runtime, shared: runtime.healthProbes).detailed()
        }
        return try CStrings.encoded(body)
    }
}

@_cdecl("tasker_metrics")
public func tasker_metrics(_ metricsJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withStringOutput(metricsJSON, "metrics_json") { () throws(FFIError) in
        let worker = try EmbeddedWorkerSlot.current()
        let runtime = worker.daemon.runtime
        let body = try FFICall.blocking { () async throws(FFIError) in await WorkerMetricsRoutes.workerMetrics(runtime) }
        let data: Data
        do {
            data = try APIJSON.encode(body)
        } catch {
            throw FFIError(.internal, "cannot encode the metrics: \(error)")
        }
        guard case .object(var members)? = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw FFIError(.internal, "the metrics body is not a JSON object")
        }
        members["ffi_dispatch"] = worker.channel.metrics.json
        return try CStrings.json(.object(members))
    }
}

@_cdecl("tasker_worker_config")
public func tasker_worker_config(_ configJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withStringOutput(configJSON, "config_json") { () throws(FFIError) in
        let runtime = try EmbeddedWorkerSlot.current().daemon.runtime
        let body = try FFICall.blocking { () async throws(FFIError) in await WorkerConfigQueryService(runtime: runtime).config() }
        return try CStrings.encoded(body)
    }
}

/// Logging installed with the environment's settings (stderr, text by default), once: before the
/// first host line, or before a worker's bootstrap applies its own level and format (so a later
/// first host line cannot reset them).
let hostLoggingReady: Bool = {
    WorkerLogging.bootstrap()
    return true
}()

private let hostLogger = Logger(label: "tasker.host")

@_cdecl("tasker_log")
public func tasker_log(_ level: Int32, _ message: UnsafePointer<CChar>?, _ fieldsJSON: UnsafePointer<CChar>?) -> Int32 {
    FFICall.run { () throws(FFIError) in
        let levels: [Logger.Level] = [.trace, .debug, .info, .warning, .error]
        guard levels.indices.contains(Int(level)) else {
            throw .invalid("level \(level) is not a tasker_log_level (0 trace … 4 error)")
        }
        let text = try CStrings.text(message, "message")
        var metadata: Logger.Metadata = [:]
        for (key, value) in try CStrings.object(fieldsJSON, "fields_json") {
            metadata[key] = .string(value.stringValue ?? ((try? value.jsonString()) ?? "null"))
        }
        _ = hostLoggingReady
        hostLogger.log(level: levels[Int(level)], "\(text)", metadata: metadata)
    }
}
