import Foundation
import Hummingbird
import TaskerHTTP

/// The DLQ routes of ``OrchestrationRoutes`` (`/v1/dlq…`, upstream's TAS-49 investigation tracking:
/// the DLQ records why a task is stuck and who looked into it; the task itself is changed through the
/// step actions). Query parameters are checked before anything reads the database: `limit` is an
/// integer ≥ 1 (above ``TaskQueries/maxDLQRows`` it is capped, as `per_page` is), `offset` ≥ 0,
/// `resolution_status` one of the four statuses in either spelling; unknown parameters are ignored.
extension OrchestrationRoutes {
    static func addDLQRoutes(_ guarded: Guarded, _ queries: TaskQueries) {
        guarded("dlq:read").get("v1/dlq") { request, _ in
            let parameters = request.uri.queryParameters
            let status = try parameters.get("resolution_status").map { value throws(TaskAPIError) in
                try resolutionStatus(String(value))
            }
            let limit = try dlqLimit(parameters.get("limit").map { String($0) }, default: 50)
            let offset =
                try parameters.get("offset").map { String($0) }.map { v throws(TaskAPIError) in
                    try TaskListFilter.integer(v, name: "offset", in: 0...1_000_000)
                } ?? 0
            return json(try await queries.dlqEntries(resolutionStatus: status, limit: limit, offset: offset))
        }
        guarded("dlq:read").get("v1/dlq/task/{task_uuid}") { _, context in
            let task = try uuid(context, "task_uuid", what: "task uuid")
            return try found(await queries.dlqEntry(task: task), "task \(task.uuidString.lowercased()) has no DLQ entry")
        }
        guarded("dlq:update").patch("v1/dlq/entry/{dlq_entry_uuid}") { request, context in
            let entry = try uuid(context, "dlq_entry_uuid", what: "DLQ entry uuid")
            let update = try DLQInvestigationUpdate(body: try await collectBody(request))
            return json(try await queries.updateDLQEntry(entry, update))
        }
        guarded("dlq:stats").get("v1/dlq/stats") { _, _ in
            json(try await queries.dlqStats())
        }
        guarded("dlq:read").get("v1/dlq/investigation-queue") { request, _ in
            let limit = try dlqLimit(request.uri.queryParameters.get("limit").map { String($0) }, default: 100)
            return json(try await queries.dlqInvestigationQueue(limit: limit))
        }
        guarded("dlq:read").get("v1/dlq/staleness") { request, _ in
            let limit = try dlqLimit(request.uri.queryParameters.get("limit").map { String($0) }, default: 100)
            return json(try await queries.dlqStaleness(limit: limit))
        }
    }

    /// A `resolution_status` query value in either spelling (`Pending`, `pending`).
    static func resolutionStatus(_ value: String) throws(TaskAPIError) -> DLQResolutionStatus {
        guard let status = DLQResolutionStatus(spelledEitherWay: value) else {
            throw TaskAPIError(
                .badRequest,
                "resolution_status must be one of \(DLQResolutionStatus.accepted), got \(String(value.prefix(64)).debugDescription)")
        }
        return status
    }

    /// A `limit` query value (or `defaultLimit`), capped at ``TaskQueries/maxDLQRows``.
    static func dlqLimit(_ value: String?, default defaultLimit: Int) throws(TaskAPIError) -> Int {
        guard let value else { return defaultLimit }
        return try TaskListFilter.integer(value, name: "limit", in: 1...TaskQueries.maxDLQRows)
    }
}
