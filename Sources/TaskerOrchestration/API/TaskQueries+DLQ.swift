import Foundation
import Logging
import TaskerHTTP
import TaskerModel
import TaskerPostgres

/// The DLQ part of the task API (`/v1/dlq…`, upstream's TAS-49 investigation tracking): reads answer
/// upstream's documents as ``DLQStatements`` builds them; the one write is an investigation's status,
/// notes, resolver and metadata. Every call waits at most ``TaskQueries/connectionWait`` for a
/// connection of the `.operator` lane, as the task reads do.
extension TaskQueries {
    /// The most rows one DLQ answer holds (a larger `limit` is capped, as `per_page` is).
    static let maxDLQRows = 100

    /// DLQ entries (`[DlqEntry]`, newest first), optionally of one resolution status.
    func dlqEntries(resolutionStatus: DLQResolutionStatus?, limit: Int, offset: Int) async throws(TaskAPIError) -> Data {
        let rows = try await documents(
            DLQStatements.entries, [resolutionStatus?.rawValue, limit, offset, documentFieldLimit], doing: "listing DLQ entries")
        return Data("[".utf8) + Self.joined(rows) + Data("]".utf8)
    }

    /// The newest DLQ entry of the task, or nil when it has none.
    func dlqEntry(task taskUUID: UUID) async throws(TaskAPIError) -> Data? {
        try await documents(DLQStatements.entryOfTask, [taskUUID, documentFieldLimit], doing: "reading a DLQ entry").first
    }

    /// Applies `update` to DLQ entry `entryUUID` and answers upstream's `UpdateInvestigationResponse`
    /// (`{"success":true,"message":…,"dlq_entry_uuid":…}`).
    /// - Throws: ``TaskAPIError`` `NOT_FOUND` for no such entry, `CONFLICT` when the entry would become
    ///   a second pending investigation of its task.
    func updateDLQEntry(_ entryUUID: UUID, _ update: DLQInvestigationUpdate) async throws(TaskAPIError) -> Data {
        let parameters: [any PostgresEncodable] = [
            entryUUID, update.status?.rawValue, update.notes, update.resolvedBy, update.metadata.map { PostgresJSON(raw: $0) },
        ]
        let updated: Int
        do {
            updated = try await pool.withConnection(lane: .operator, waitingAtMost: Self.connectionWait) { c in
                let rows = try await c.query(DLQStatements.update, parameters)
                let count: Int = try rows.first?.decode("updated") ?? 0
                return count
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw TaskAPIError(
                .conflict,
                "DLQ entry \(entryUUID.lowercased) cannot become pending: its task already has a pending DLQ investigation")
        } catch {
            throw databaseError(error, doing: "updating a DLQ entry")
        }
        guard updated > 0 else { throw TaskAPIError(.notFound, "DLQ entry not found: \(entryUUID.lowercased)") }
        logger.info(
            "DLQ investigation updated",
            metadata: [
                "dlq_entry_uuid": "\(entryUUID.lowercased)", "resolution_status": "\(update.status?.rawValue ?? "unchanged")",
                "resolved_by": "\(update.resolvedBy ?? "unchanged")",
            ])
        var writer = JSONWriter(sortedKeys: false, escapeSlashes: false)
        writer.open("{")
        writer.key("success", first: true)
        writer.bool(true)
        writer.member("message", "Investigation status updated successfully")
        writer.member("dlq_entry_uuid", entryUUID.lowercased)
        writer.close("}")
        return Data(writer.text.utf8)
    }

    /// The DLQ's statistics by reason (`[DlqStats]`).
    func dlqStats() async throws(TaskAPIError) -> Data {
        let rows = try await documents(DLQStatements.stats, [], doing: "reading DLQ statistics")
        return Data("[".utf8) + Self.joined(rows) + Data("]".utf8)
    }

    /// The pending investigations, highest priority first (`[DlqInvestigationQueueEntry]`), at most `limit`.
    func dlqInvestigationQueue(limit: Int) async throws(TaskAPIError) -> Data {
        let rows = try await documents(DLQStatements.investigationQueue, [limit], doing: "reading the DLQ investigation queue")
        return Data("[".utf8) + Self.joined(rows) + Data("]".utf8)
    }

    /// The waiting and running tasks by staleness (`[StalenessMonitoring]`), at most `limit`.
    func dlqStaleness(limit: Int) async throws(TaskAPIError) -> Data {
        let rows = try await documents(DLQStatements.staleness, [limit], doing: "reading task staleness")
        return Data("[".utf8) + Self.joined(rows) + Data("]".utf8)
    }
}
