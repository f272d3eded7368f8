import Foundation
import Hummingbird
import NIOCore
import TaskerAuth
import TaskerHTTP
import TaskerModel
import TaskerStore

/// The orchestration's operator answers (no authentication, as the worker's):
///
/// - `GET /health/ready`: `{"status","timestamp"}`, 200 `healthy` only while the database answers
///   and, on RabbitMQ, the broker connection is up; else 503 `unhealthy`.
/// - `GET /health/detailed`: always 200; `status` as readiness's, plus `checks.database` and
///   `checks.messaging` (`{"status","message"}`: "RabbitMQ connected to amqp://…" with the password
///   hidden, the connections made and the step messages published, "PGMQ", or "PGMQ in its own
///   database …" with whether that database answers: unhealthy when it does not).
/// - `GET /metrics`: Prometheus text 0.0.4 (`PrometheusText`, the worker's renderer): the
///   orchestration's counters (results, duplicate results, poison, task requests, finalizations,
///   stale tasks) and, on RabbitMQ, the broker's connection state, connections made, step messages
///   confirmed and publish retries.
enum OrchestrationOperatorRoutes {
    /// One check of `/health/detailed`.
    struct Check: Codable, Equatable {
        var status: String
        var message: String
    }

    /// `/health/detailed`'s body.
    struct Detailed: Codable, Equatable {
        var status: String
        var timestamp: String
        var checks: [String: Check]
    }

    static func checks(_ queries: TaskQueries) async -> [String: Check] {
        let database =
            await queries.databaseAnswers()
            ? Check(status: "healthy", message: "database answers") : Check(status: "unhealthy", message: "database does not answer")
        if let queueDatabase = queries.orchestration.queueDatabase {
            let answers = await queueDatabase.probe.answers()
            let check = Check(
                status: answers ? "healthy" : "unhealthy",
                message: "PGMQ in its own database \(queueDatabase.description) (\(answers ? "answers" : "does not answer"))")
            return ["database": database, "messaging": check]
        }
        return ["database": database, "messaging": messaging(queries.orchestration.broker?.status)]
    }

    /// The messaging check: PGMQ (in the database), or the broker connection's state.
    static func messaging(_ broker: OrchestrationBrokerStatus?) -> Check {
        guard let broker else { return Check(status: "healthy", message: "PGMQ (in the database)") }
        let figures = "connections: \(broker.connections), step messages published: \(broker.published)"
        return broker.connected
            ? Check(status: "healthy", message: "RabbitMQ connected to \(broker.broker) (\(figures))")
            : Check(status: "unhealthy", message: "RabbitMQ disconnected from \(broker.broker) (\(figures))")
    }

    static func overall(_ checks: [String: Check]) -> String {
        checks.values.allSatisfy { $0.status == "healthy" } ? "healthy" : "unhealthy"
    }

    static func readiness(_ queries: TaskQueries) async -> Response {
        let status = overall(await checks(queries))
        return OrchestrationRoutes.json(
            Data(#"{"status":"\#(status)","timestamp":"\#(OrchestrationRoutes.now())"}"#.utf8),
            status: status == "healthy" ? .ok : .serviceUnavailable)
    }

    static func detailed(_ queries: TaskQueries) async -> Response {
        let checks = await checks(queries)
        let body = Detailed(status: overall(checks), timestamp: OrchestrationRoutes.now(), checks: checks)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return OrchestrationRoutes.json((try? encoder.encode(body)) ?? Data(#"{"status":"unhealthy"}"#.utf8))
    }

    static func metrics(_ service: OrchestrationService) -> Response {
        Response(
            status: .ok, headers: [.contentType: PrometheusText.contentType],
            body: ResponseBody(byteBuffer: ByteBuffer(string: PrometheusText.render(families(service)))))
    }

    /// The metric families of `/metrics`.
    static func families(_ service: OrchestrationService) -> [MetricFamily] {
        let statistics = service.statistics
        var families: [MetricFamily] = [
            .single(
                "tasker_orchestration_results_processed_total", .counter, help: "Step result messages processed",
                value: Double(statistics.resultsProcessed)),
            .single(
                "tasker_orchestration_duplicate_results_total", .counter,
                help: "Of the results processed, those for a step no longer waiting for them (settled without effect)",
                value: Double(statistics.duplicateResults)),
            .single(
                "tasker_orchestration_poison_messages_total", .counter,
                help: "Messages settled without effect (undecodable, unknown, refused)",
                value: Double(statistics.poisonMessages)),
            .single(
                "tasker_orchestration_task_requests_processed_total", .counter, help: "Task requests turned into tasks",
                value: Double(statistics.taskRequestsProcessed)),
            .single(
                "tasker_orchestration_finalizations_processed_total", .counter, help: "Finalization messages processed",
                value: Double(statistics.finalizationsProcessed)),
            .single(
                "tasker_orchestration_stale_tasks_detected_total", .counter, help: "Stale tasks found by the staleness detector",
                value: Double(statistics.staleTasksDetected)),
        ]
        if let broker = service.broker?.status {
            families += [
                .single(
                    "tasker_orchestration_broker_connected", .gauge, help: "1 while the RabbitMQ connection is up",
                    value: broker.connected ? 1 : 0),
                .single(
                    "tasker_orchestration_broker_connections_total", .counter,
                    help: "RabbitMQ connections made (each reconnect adds one)", value: Double(broker.connections)),
                .single(
                    "tasker_orchestration_broker_published_total", .counter, help: "Step messages the broker confirmed",
                    value: Double(broker.published)),
                .single(
                    "tasker_orchestration_broker_publish_retries_total", .counter,
                    help: "Step message publishes retried (lost connection, nack)", value: Double(broker.publishRetries)),
            ]
        }
        return families
    }
}
