import Foundation
import NIOHTTP1
import TaskerHandlerSDK
import TaskerModel
import TaskerWorker

// `tasker_worker.h`: the orchestration client (upstream's FFI client bridge, `tasker_client_*`).

/// Runs one client call of the running worker: `request` builds the request from the checked
/// arguments, `shape` turns the API's answer into the call's output (the answer itself by default).
private func clientCall(
    _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ name: String,
    _ request: () throws(FFIError) -> OrchestrationAPIClient.Request,
    shape: @escaping @Sendable (JSONValue) -> JSONValue = { $0 }
) -> Int32 {
    withStringOutput(out, name) { () throws(FFIError) in
        let request = try request()
        let worker = try EmbeddedWorkerSlot.current()
        let client = OrchestrationAPIClient(settings: worker.daemon.runtime.configuration.worker.orchestrationClient)
        let answer = try FFICall.blocking { () async throws(FFIError) in try await client.send(request) }
        return try CStrings.json(shape(answer))
    }
}

/// A uuid argument, lowercased for the path; anything else is an invalid argument naming it.
private func uuidArgument(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(FFIError) -> String {
    let text = try CStrings.text(pointer, name)
    guard let uuid = UUID(uuidString: text) else { throw .invalid("\(name) is not a UUID: \"\(text.prefix(64))\"") }
    return uuid.uuidString.lowercased()
}

/// `/v1/tasks/{task_uuid}/workflow_steps/{step_uuid}` from the two uuid arguments.
private func stepPath(_ taskUUID: UnsafePointer<CChar>?, _ stepUUID: UnsafePointer<CChar>?) throws(FFIError) -> String {
    "/v1/tasks/\(try uuidArgument(taskUUID, "task_uuid"))/workflow_steps/\(try uuidArgument(stepUUID, "step_uuid"))"
}

/// `answer` (an object) with `extra`'s members added, as upstream's bridge answers some calls.
private func adding(_ extra: [String: JSONValue], to answer: JSONValue) -> JSONValue {
    guard case .object(var members) = answer else { return .object(extra.merging(["answer": answer]) { a, _ in a }) }
    for (key, value) in extra { members[key] = value }
    return .object(members)
}

@_cdecl("tasker_client_health_check")
public func tasker_client_health_check(_ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    clientCall(resultJSON, "result_json", { .init(method: .GET, path: "/health") }) { adding(["healthy": .bool(true)], to: $0) }
}

@_cdecl("tasker_client_create_task")
public func tasker_client_create_task(
    _ requestJSON: UnsafePointer<CChar>?, _ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    clientCall(resultJSON, "result_json") { () throws(FFIError) in
        guard requestJSON != nil else { throw .invalid("request_json is NULL") }
        let members = try CStrings.object(requestJSON, "request_json")
        let body: String
        do {
            body = try JSONValue.object(members).jsonString()
        } catch {
            throw .invalid("request_json cannot be sent: \(error)")
        }
        return .init(method: .POST, path: "/v1/tasks", body: body)
    }
}

@_cdecl("tasker_client_get_task")
public func tasker_client_get_task(
    _ taskUUID: UnsafePointer<CChar>?, _ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    clientCall(resultJSON, "result_json") { () throws(FFIError) in
        .init(method: .GET, path: "/v1/tasks/\(try uuidArgument(taskUUID, "task_uuid"))")
    }
}

@_cdecl("tasker_client_list_tasks")
public func tasker_client_list_tasks(
    _ limit: Int32, _ offset: Int32, _ namespaceName: UnsafePointer<CChar>?, _ status: UnsafePointer<CChar>?,
    _ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    clientCall(resultJSON, "result_json") { () throws(FFIError) in
        guard limit >= 1 else { throw .invalid("limit must be at least 1 (got \(limit))") }
        guard offset >= 0 else { throw .invalid("offset is negative (\(offset))") }
        // As upstream's client: the API pages, so the offset selects the page that holds it.
        var query = "page=\(offset / limit + 1)&per_page=\(limit)"
        if namespaceName != nil {
            query += "&namespace=\(OrchestrationAPIClient.queryValue(try CStrings.text(namespaceName, "namespace_name")))"
        }
        if status != nil {
            query += "&status=\(OrchestrationAPIClient.queryValue(try CStrings.text(status, "status")))"
        }
        return .init(method: .GET, path: "/v1/tasks?\(query)")
    }
}

@_cdecl("tasker_client_cancel_task")
public func tasker_client_cancel_task(
    _ taskUUID: UnsafePointer<CChar>?, _ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    clientCall(
        resultJSON, "result_json",
        { () throws(FFIError) in
            .init(method: .DELETE, path: "/v1/tasks/\(try uuidArgument(taskUUID, "task_uuid"))")
        }
    ) { .object(["cancelled": .bool(true), "task": $0]) }
}

@_cdecl("tasker_client_list_task_steps")
public func tasker_client_list_task_steps(
    _ taskUUID: UnsafePointer<CChar>?, _ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    clientCall(resultJSON, "result_json") { () throws(FFIError) in
        .init(method: .GET, path: "/v1/tasks/\(try uuidArgument(taskUUID, "task_uuid"))/workflow_steps")
    }
}

@_cdecl("tasker_client_get_step")
public func tasker_client_get_step(
    _ taskUUID: UnsafePointer<CChar>?, _ stepUUID: UnsafePointer<CChar>?,
    _ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    clientCall(resultJSON, "result_json") { () throws(FFIError) in
        .init(method: .GET, path: try stepPath(taskUUID, stepUUID))
    }
}

@_cdecl("tasker_client_get_step_audit_history")
public func tasker_client_get_step_audit_history(
    _ taskUUID: UnsafePointer<CChar>?, _ stepUUID: UnsafePointer<CChar>?,
    _ resultJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    clientCall(resultJSON, "result_json") { () throws(FFIError) in
        .init(method: .GET, path: try stepPath(taskUUID, stepUUID) + "/audit")
    }
}
