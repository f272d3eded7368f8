import TaskerHandlerSDK
import TaskerModel
import TaskerWorker

// `tasker_worker.h`: the FFI dispatch channel.

/// `timeout_ms` as a duration; negative is an invalid argument.
func pollTimeout(_ milliseconds: Int32) throws(FFIError) -> Duration {
    guard milliseconds >= 0 else { throw .invalid("timeout_ms is negative (\(milliseconds))") }
    return .milliseconds(Int64(milliseconds))
}

@_cdecl("tasker_poll_step_event")
public func tasker_poll_step_event(
    _ timeoutMs: Int32, _ eventJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    withStringOutput(eventJSON, "event_json") { () throws(FFIError) in
        let timeout = try pollTimeout(timeoutMs)
        let channel = try EmbeddedWorkerSlot.current(serving: true).channel
        // Blocks only this (foreign) thread; a step arriving wakes it directly.
        let event = channel.pollBlocking(timeout: timeout)
        return try event.map { event throws(FFIError) in try CStrings.copy(event.json) }
    }
}

@_cdecl("tasker_complete_step_event")
public func tasker_complete_step_event(_ eventID: UnsafePointer<CChar>?, _ resultJSON: UnsafePointer<CChar>?) -> Int32 {
    FFICall.run { () throws(FFIError) in
        let id = try CStrings.text(eventID, "event_id")
        let result = try CStrings.text(resultJSON, "result_json")
        let channel = try EmbeddedWorkerSlot.current().channel
        do throws(ForeignDispatchError) {
            try channel.complete(eventID: id, resultJSON: result)
        } catch {
            throw FFIError(error)
        }
    }
}

@_cdecl("tasker_checkpoint_yield_step_event")
public func tasker_checkpoint_yield_step_event(
    _ eventID: UnsafePointer<CChar>?, _ checkpointJSON: UnsafePointer<CChar>?
) -> Int32 {
    FFICall.run { () throws(FFIError) in
        let id = try CStrings.text(eventID, "event_id")
        let checkpoint = try CStrings.text(checkpointJSON, "checkpoint_json")
        let channel = try EmbeddedWorkerSlot.current().channel
        do throws(ForeignDispatchError) {
            try channel.checkpointYield(eventID: id, checkpointJSON: checkpoint)
        } catch {
            throw FFIError(error)
        }
    }
}

@_cdecl("tasker_ffi_dispatch_metrics")
public func tasker_ffi_dispatch_metrics(_ metricsJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withStringOutput(metricsJSON, "metrics_json") { () throws(FFIError) in
        try CStrings.json(try EmbeddedWorkerSlot.current().channel.metrics.json)
    }
}

@_cdecl("tasker_check_starvation_warnings")
public func tasker_check_starvation_warnings(_ starving: UnsafeMutablePointer<Int32>?) -> Int32 {
    withNumberOutput(starving, "starving") { () throws(FFIError) in
        Int32(clamping: try EmbeddedWorkerSlot.current().channel.reportStarvation())
    }
}

@_cdecl("tasker_cleanup_timeouts")
public func tasker_cleanup_timeouts(_ cleaned: UnsafeMutablePointer<Int64>?) -> Int32 {
    withNumberOutput(cleaned, "cleaned") { () throws(FFIError) in
        Int64(try EmbeddedWorkerSlot.current().channel.cleanupTimeouts())
    }
}
