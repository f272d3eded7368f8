import TaskerHandlerSDK
import TaskerModel
import TaskerWorker

// `tasker_worker.h`: lifecycle.

@_cdecl("tasker_worker_bootstrap")
public func tasker_worker_bootstrap(
    _ configJSON: UnsafePointer<CChar>?, _ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    withStringOutput(resultJSON, "result_json") { () throws(FFIError) in
        let options = try BootstrapOptions(CStrings.object(configJSON, "config_json"))
        LibraryPinning.pin()
        try EmbeddedWorkerSlot.beginStarting()
        let worker: EmbeddedWorker
        do throws(FFIError) {
            worker = try FFICall.blocking { () async throws(FFIError) in try await EmbeddedWorker.start(options) }
        } catch {
            EmbeddedWorkerSlot.finishStarting(nil)
            throw error
        }
        EmbeddedWorkerSlot.finishStarting(worker)
        return try CStrings.json(worker.bootstrapResult)
    }
}

@_cdecl("tasker_worker_stop")
public func tasker_worker_stop(_ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withStringOutput(resultJSON, "result_json") { () throws(FFIError) in
        guard let worker = EmbeddedWorkerSlot.beginStopping() else {
            return try CStrings.json(["status": "not_running"])
        }
        try FFICall.blocking { () async throws(FFIError) in await worker.stop() }
        EmbeddedWorkerSlot.stopped(worker)
        return try CStrings.json(["status": "stopped"])
    }
}

@_cdecl("tasker_worker_begin_shutdown")
public func tasker_worker_begin_shutdown(_ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withStringOutput(resultJSON, "result_json") { () throws(FFIError) in
        let worker = try EmbeddedWorkerSlot.current()
        try FFICall.blocking { () async throws(FFIError) in await worker.beginShutdown() }
        return try CStrings.json(["status": "shutting_down"])
    }
}

@_cdecl("tasker_worker_status")
public func tasker_worker_status(_ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withStringOutput(resultJSON, "result_json") { () throws(FFIError) in
        let worker = try EmbeddedWorkerSlot.current()
        return try CStrings.json(try FFICall.blocking { () async throws(FFIError) in await worker.status() })
    }
}

@_cdecl("tasker_worker_is_running")
public func tasker_worker_is_running(_ running: UnsafeMutablePointer<Int32>?) -> Int32 {
    withNumberOutput(running, "running") { () throws(FFIError) in
        ((try? EmbeddedWorkerSlot.current())?.isRunning ?? false) ? 1 : 0
    }
}
