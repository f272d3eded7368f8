import Foundation
import Hummingbird
import TaskerHTTP
import TaskerModel
import TaskerPostgres

/// The task and step routes of ``OrchestrationRoutes`` (`/v1/tasks…`).
extension OrchestrationRoutes {
    /// `POST/GET /v1/tasks`, `GET/DELETE /v1/tasks/{uuid}`, `GET /v1/tasks/{uuid}/summary`.
    static func addTaskRoutes(_ guarded: Guarded, _ queries: TaskQueries) {
        guarded("tasks:create").post("v1/tasks") { request, _ in
            let taskRequest = try decodeTaskRequest(try await collectBody(request))
            return json(try await queries.create(taskRequest), status: .created)
        }
        guarded("tasks:list").get("v1/tasks") { request, _ in
            let query = request.uri.queryParameters.map { (String($0.key), String($0.value)) }
            return json(try await queries.list(try TaskListFilter(query: query)))
        }
        guarded("tasks:read").get("v1/tasks/{uuid}") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            return try found(await queries.task(task), "task \(task.uuidString.lowercased()) does not exist")
        }
        guarded("tasks:cancel").delete("v1/tasks/{uuid}") { _, context in
            json(try await queries.cancel(try uuid(context, "uuid", what: "task uuid")))
        }
        guarded("tasks:read").get("v1/tasks/{uuid}/summary") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            return try found(await queries.summary(task), "task \(task.uuidString.lowercased()) does not exist")
        }
    }

    /// `GET /v1/tasks/{uuid}/workflow_steps[/{step_uuid}[/audit]]` and the operator's actions,
    /// `PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}` (a ``StepManualAction``; the path and the body
    /// are checked before anything reads the database).
    static func addStepRoutes(_ guarded: Guarded, _ queries: TaskQueries) {
        guarded("steps:read").get("v1/tasks/{uuid}/workflow_steps") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            return try found(await queries.steps(task), "task \(task.uuidString.lowercased()) does not exist")
        }
        guarded("steps:read").get("v1/tasks/{uuid}/workflow_steps/{step_uuid}") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            let step = try uuid(context, "step_uuid", what: "step uuid")
            return try found(await queries.step(task, step), notFound(step: step, task: task))
        }
        guarded("steps:resolve").patch("v1/tasks/{uuid}/workflow_steps/{step_uuid}") { request, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            let step = try uuid(context, "step_uuid", what: "step uuid")
            let action = try StepManualAction(body: try await collectBody(request))
            return json(try await queries.resolveStep(task, step, action))
        }
        guarded("steps:read").get("v1/tasks/{uuid}/workflow_steps/{step_uuid}/audit") { _, context in
            let task = try uuid(context, "uuid", what: "task uuid")
            let step = try uuid(context, "step_uuid", what: "step uuid")
            return try found(await queries.audit(task, step), notFound(step: step, task: task))
        }
    }

    static func decodeTaskRequest(_ body: Data) throws(TaskAPIError) -> TaskRequest {
        do {
            return try UntrustedJSON.decode(
                TaskRequest.self, from: body, limit: UntrustedJSON.maximumValueDepth, what: "the task request body")
        } catch let error as JSONNestingError {
            throw TaskAPIError(.badRequest, "Invalid JSON body: \(error)")
        } catch DecodingError.keyNotFound(let key, _) {
            throw TaskAPIError(.badRequest, "Invalid JSON body: missing field \(key.stringValue.debugDescription)")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw TaskAPIError(.badRequest, "Invalid JSON body: field \(path.debugDescription) has the wrong type")
        } catch DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty {
            // A number out of range (`priority` 2^70), a uuid that is not one.
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw TaskAPIError(
                .badRequest,
                "Invalid JSON body: field \(path.debugDescription) has an invalid value (\(String(context.debugDescription.prefix(200))))")
        } catch {
            // Foundation refuses an integer beyond 64 bits without naming where it was (no coding
            // path): `priority` is the request's only integer field.
            if case .object(let fields)? = try? UntrustedJSON.decode(
                JSONValue.self, from: body, limit: UntrustedJSON.maximumValueDepth, what: "the task request body"),
                case .double? = fields["priority"]
            {
                throw TaskAPIError(.badRequest, "Invalid JSON body: field \"priority\" is not an integer in -100...100")
            }
            throw TaskAPIError(.badRequest, "Invalid JSON body: not a JSON object of a task request")
        }
    }

}
