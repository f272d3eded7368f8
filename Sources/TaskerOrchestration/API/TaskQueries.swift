import Foundation
import Logging
import TaskerAuth
import TaskerHTTP
import TaskerModel
import TaskerPostgres

/// The task API's one implementation, shared by the REST routes (`OrchestrationWebServer`) and
/// `tasker-dev task`: reads answer upstream's JSON documents as built by PostgreSQL
/// (`TaskQueryStatements`); creation goes through the orchestration's own task initialization (the
/// path `submit` and queued task requests take); cancellation moves the task and its unclaimed steps
/// to `cancelled` in one statement.
///
/// Budget: every read waits at most ``connectionWait`` for a connection of the pool's `.operator`
/// lane, then fails with `SERVICE_UNAVAILABLE` and a `Retry-After` (an overloaded API sheds at once
/// instead of queueing); ``databaseAnswers()`` (health) uses a connection of its own
/// (``DatabaseProbe``). Size: lists carry summaries (``TaskQueryStatements/taskSummaries``: no context,
/// no per-step readiness), and with a ``documentFieldLimit`` a context, step result or DLQ snapshot
/// larger than it is replaced by an omission marker (``TaskQueryStatements/bounded(_:)``).
public struct TaskQueries: Sendable {
    let pool: PostgresConnectionPool
    /// The orchestration creating tasks (and read by the operator routes).
    let orchestration: OrchestrationService
    let logger: Logger
    private let probe: DatabaseProbe
    /// The largest context, step result or DLQ task snapshot (bytes of its JSON text) a document
    /// carries whole; nil = no limit (`tasker-dev task`, which reads the database itself).
    public let documentFieldLimit: Int?

    /// The REST API's ``documentFieldLimit``: 1 MiB.
    public static let defaultDocumentFieldLimit = 1 << 20
    /// The longest a request waits for a database connection before answering 503.
    static let connectionWait: Duration = .seconds(1)
    /// The `Retry-After` of that 503, in seconds.
    static let retryAfterSeconds = 1

    /// Queries on `pool`; tasks are created by `orchestration` (which may share the pool).
    public init(
        pool: PostgresConnectionPool, orchestration: OrchestrationService,
        documentFieldLimit: Int? = TaskQueries.defaultDocumentFieldLimit,
        logger: Logger = Logger(label: "tasker.orchestration.api")
    ) {
        self.pool = pool
        self.orchestration = orchestration
        self.documentFieldLimit = documentFieldLimit
        self.logger = logger
        self.probe = DatabaseProbe(configuration: pool.configuration, logger: logger)
    }

    /// Runs `body` on a connection of the `.operator` lane, waiting at most ``connectionWait`` for it.
    func withConnection<T: Sendable>(
        doing what: String, _ body: sending (PostgresConnection) async throws -> T
    ) async throws(TaskAPIError) -> T {
        do {
            return try await pool.withConnection(lane: .operator, waitingAtMost: Self.connectionWait, body)
        } catch {
            throw databaseError(error, doing: what)
        }
    }

    /// Creates and starts the task; answers its `TaskResponse`.
    /// - Throws: ``TaskAPIError`` `NOT_FOUND` for an unknown template, `CONFLICT` for a duplicate identity.
    public func create(_ request: TaskRequest) async throws(TaskAPIError) -> Data {
        let created: CreatedTask
        do {
            guard case .taskInitialized(let task) = try await orchestration.process(.initializeTask(request)) else {
                throw TaskAPIError(.databaseError, "the task was not created")
            }
            created = task
        } catch let error as TaskAPIError {
            throw error
        } catch OrchestrationError.templateNotFound(let namespace, let name, let version) {
            throw TaskAPIError(
                .notFound, "Task template not found: \(namespace)/\(name)/\(version) is not registered (start a worker that serves it)")
        } catch let error as OrchestrationError {
            if case .duplicateTask = error { throw TaskAPIError(.conflict, error.description) }
            throw TaskAPIError(.badRequest, error.description)
        } catch {
            throw databaseError(error, doing: "creating a task")
        }
        guard let document = try await task(created.taskUUID) else {
            throw TaskAPIError(.notFound, "task \(created.taskUUID.lowercased) does not exist")
        }
        return document
    }

    /// The task's `TaskResponse`, or nil when there is no such task.
    public func task(_ taskUUID: UUID) async throws(TaskAPIError) -> Data? {
        try await documents(TaskQueryStatements.tasks, [PostgresArrayLiteral([taskUUID]), documentFieldLimit], doing: "reading a task")
            .first
    }

    /// One page of tasks: upstream's `TaskListResponse` (`tasks`, `pagination`), each task a summary
    /// (``TaskQueryStatements/taskSummaries``: its context and step readiness are left out).
    public func list(_ filter: TaskListFilter) async throws(TaskAPIError) -> Data {
        let page: (total: Int, uuids: [UUID]) = try await withConnection(doing: "listing tasks") { c in
            let rows = try await c.query(
                TaskQueryStatements.taskPage,
                [
                    filter.namespace, filter.status, filter.initiator, filter.sourceSystem, filter.perPage,
                    (filter.page - 1) * filter.perPage,
                ])
            let total: Int = try rows.first?.decode("total") ?? 0
            let literal: String = try rows.first?.decode("uuids") ?? "{}"
            return (total: total, uuids: Self.uuids(inArrayLiteral: literal))
        }
        let tasks =
            page.uuids.isEmpty
            ? [] : try await documents(TaskQueryStatements.taskSummaries, [PostgresArrayLiteral(page.uuids)], doing: "listing tasks")
        let totalPages = (page.total + filter.perPage - 1) / filter.perPage
        let pagination = """
            {"page":\(filter.page),"per_page":\(filter.perPage),"total_count":\(page.total),\
            "total_pages":\(totalPages),"has_next":\(filter.page < totalPages),"has_previous":\(filter.page > 1)}
            """
        return Data(#"{"tasks":["#.utf8) + Self.joined(tasks) + Data(#"],"pagination":\#(pagination)}"#.utf8)
    }

    /// Whether the task exists: the orchestration's own identity read (`TaskRepository`), not the
    /// whole `TaskResponse` (its readiness and execution context are computed per step).
    func exists(_ taskUUID: UUID) async throws(TaskAPIError) -> Bool {
        try await withConnection(doing: "reading a task") { c in
            !(try await c.query(TaskRepository.Statements.identity, [taskUUID])).isEmpty
        }
    }

    /// The task's steps (`[StepResponse]`), or nil when there is no such task.
    public func steps(_ taskUUID: UUID) async throws(TaskAPIError) -> Data? {
        guard try await exists(taskUUID) else { return nil }
        let steps = try await documents(
            TaskQueryStatements.steps, [taskUUID, UUID?.none, documentFieldLimit], doing: "reading steps")
        return Data("[".utf8) + Self.joined(steps) + Data("]".utf8)
    }

    /// One step's `StepResponse`, or nil when the task has no such step.
    public func step(_ taskUUID: UUID, _ stepUUID: UUID) async throws(TaskAPIError) -> Data? {
        try await documents(TaskQueryStatements.steps, [taskUUID, stepUUID, documentFieldLimit], doing: "reading a step").first
    }

    /// The step's audit history (`[StepAuditResponse]`, newest first), or nil when the task has no such step.
    public func audit(_ taskUUID: UUID, _ stepUUID: UUID) async throws(TaskAPIError) -> Data? {
        let exists = try await documents(TaskQueryStatements.stepOfTask, [taskUUID, stepUUID], column: nil, doing: "reading a step")
        guard !exists.isEmpty else { return nil }
        let rows = try await documents(
            TaskQueryStatements.audit, [taskUUID, stepUUID, documentFieldLimit], doing: "reading an audit history")
        return Data("[".utf8) + Self.joined(rows) + Data("]".utf8)
    }

    /// Cancels the task (and its steps that no worker holds); answers its `TaskResponse` afterwards.
    /// - Throws: ``TaskAPIError`` `NOT_FOUND` for no such task, `BAD_REQUEST` when it already finished.
    public func cancel(_ taskUUID: UUID) async throws(TaskAPIError) -> Data {
        let processorUUID = orchestration.processor.context.processorUUID
        let outcome: CancelOutcome = try await withConnection(doing: "cancelling a task") { c in
            try await c.transaction { c throws(PostgresError) -> CancelOutcome in
                try Self.cancel(c, taskUUID: taskUUID, processorUUID: processorUUID)
            }
        }
        switch outcome {
        case .notFound:
            throw TaskAPIError(.notFound, "task \(taskUUID.lowercased) does not exist")
        case .finished(let state):
            throw TaskAPIError(.badRequest, "task \(taskUUID.lowercased) cannot be cancelled: it is already \(state.rawValue)")
        case .busy:
            throw TaskAPIError(.conflict, "task \(taskUUID.lowercased) kept changing state; try again")
        case .cancelled(let previous, let steps):
            logger.info(
                "task cancelled",
                metadata: ["task_uuid": "\(taskUUID.lowercased)", "previous_state": "\(previous.rawValue)", "cancelled_steps": "\(steps)"])
        }
        guard let document = try await task(taskUUID) else {
            throw TaskAPIError(.notFound, "task \(taskUUID.lowercased) does not exist")
        }
        return document
    }

    /// What ``cancel(_:)`` found and did.
    enum CancelOutcome: Sendable, Equatable {
        case notFound
        /// The task was already in this final state.
        case finished(TaskState)
        /// The task's state changed under every attempt (the orchestration kept moving it).
        case busy
        case cancelled(from: TaskState, steps: Int)
    }

    /// The cancellation inside the caller's transaction: moves the task to `cancelled` with the
    /// orchestration's own compare-and-set (`TransitionRepository.transitionTask`, event `Cancel`),
    /// re-reading the state when the orchestration moved it in between (at most `cancelAttempts`
    /// times), then its unclaimed steps. The task row is not locked: the orchestration takes that
    /// lock (finalization) after its own transitions, so taking it first here could deadlock with a
    /// result being processed; the compare-and-set alone orders the two.
    static func cancel(_ c: isolated PostgresConnection, taskUUID: UUID, processorUUID: UUID) throws(PostgresError) -> CancelOutcome {
        guard !(try c.query(TaskRepository.Statements.identity, [taskUUID])).isEmpty else { return .notFound }
        for _ in 0..<cancelAttempts {
            // No transition yet: the task is being created (its first transition commits with it).
            guard let state = try TransitionRepository.currentTaskState(c, taskUUID: taskUUID) else { continue }
            if state.isTerminal { return .finished(state) }
            if try TransitionRepository.transitionTask(
                c, taskUUID: taskUUID, from: state, to: .cancelled, event: .cancel, processorUUID: processorUUID)
            {
                let metadata = TransitionRepository.stepMetadata(.cancel, now: Date())
                let steps: Int =
                    try c.query(TaskQueryStatements.cancelSteps, [taskUUID, metadata])
                    .first?.decode("cancelled_steps") ?? 0
                return .cancelled(from: state, steps: steps)
            }
        }
        return .busy
    }

    /// How often ``cancel(_:taskUUID:processorUUID:)`` re-reads a task whose state changed under it.
    static let cancelAttempts = 5

    /// Whether the database answers (`/health`): on the probe's own connection, within
    /// ``DatabaseProbe/deadline``, whatever the API's lane is doing.
    func databaseAnswers() async -> Bool {
        await probe.answers()
    }

    /// Closes the health probe's connection (the pool is its owner's to close).
    public func close() async {
        await probe.close()
    }

    // MARK: - Helpers

    /// The `doc` column (or, with `column: nil`, one empty document per row) of every row.
    func documents(
        _ sql: String, _ parameters: [any PostgresEncodable], column: String? = "doc", doing what: String
    ) async throws(TaskAPIError) -> [Data] {
        try await withConnection(doing: what) { c in
            try await c.query(sql, parameters).map { row throws(PostgresError) in
                guard let column else { return Data() }
                let text: String = try row.decode(column)
                return Data(text.utf8)
            }
        }
    }

    /// A database failure: the detail goes to the log, the answer names only what was being done. No
    /// connection free within ``connectionWait`` is `SERVICE_UNAVAILABLE` with ``retryAfterSeconds``.
    func databaseError(_ error: any Error, doing what: String) -> TaskAPIError {
        if let error = error as? TaskAPIError { return error }
        if let error = error as? PostgresError, error.kind == .acquireTimeout {
            return TaskAPIError(
                .serviceUnavailable,
                "The task API is busy: no database connection became free within \(Self.connectionWait.inMilliseconds) ms "
                    + "while \(what); retry after \(Self.retryAfterSeconds) s",
                retryAfterSeconds: Self.retryAfterSeconds)
        }
        logger.warning("task API database error", metadata: ["while": "\(what)", "error": "\(error)"])
        return TaskAPIError(.databaseError, "Database operation failed while \(what)")
    }

    /// The uuids of a `uuid[]` in text form (`{a,b}`); elements that are not uuids are skipped.
    static func uuids(inArrayLiteral literal: String) -> [UUID] {
        literal.trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(separator: ",").compactMap {
            UUID(uuidString: String($0))
        }
    }

    static func joined(_ documents: [Data]) -> Data {
        var out = Data()
        for (index, document) in documents.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(document)
        }
        return out
    }
}

extension UUID {
    /// The lower-case text form (`uuidString` is upper case).
    var lowercased: String { uuidString.lowercased() }
}
