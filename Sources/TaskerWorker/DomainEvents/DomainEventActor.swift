import Foundation
import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// A domain event as upstream publishes it (`<ns>_domain_events`, and in-process subscribers).
public struct DomainEvent: Sendable, Equatable {
    /// The event's name as declared in the template (`publishes_events[].name`).
    public let name: String
    /// The full upstream `DomainEvent` JSON.
    public let json: JSONValue
}

/// Publishes a step's declared domain events, only AFTER its result has committed.
///
/// For every `publishes_events` entry whose condition matches the result (`success`, `failure`,
/// `retryable_failure`, `permanent_failure`, `always`), in declaration order: `durable` sends the
/// upstream `DomainEvent` JSON to `<ns>_domain_events` with `pgmq_send_with_notify` (RabbitMQ: one
/// confirmed publish to the queue of that name, `RabbitMQMessaging.publishEvent`), `fast` yields
/// it to in-process subscribers (`events`), `broadcast` does both. Fire-and-forget: a failure is
/// logged and counted and never fails the step. An event whose payload (`result.result`) does not
/// satisfy the declaration's JSON `schema` is skipped (logged, counted in `domainEventsInvalid`).
package actor DomainEventActor: WorkerActor {
    nonisolated let actorName = "domain_events"
    private let statistics: WorkerStatistics
    private let logger: Logger
    /// Where durable events go: PGMQ or the broker.
    private let transport: any StepTransport
    private var subscribers: [UUID: AsyncStream<DomainEvent>.Continuation] = [:]
    /// Set at shutdown: events not published by then are dropped (logged and counted).
    private var drainDeadline: ContinuousClock.Instant?

    init(
        pool: PostgresConnectionPool, statistics: WorkerStatistics, transport: (any StepTransport)? = nil,
        logger: Logger = Logger(label: "tasker.domain_events")
    ) {
        self.transport = transport ?? PGMQTransport(pool: pool)
        self.statistics = statistics
        self.logger = logger
    }

    /// In-process delivery of `fast` and `broadcast` events to a new subscriber.
    package func subscribe(bufferSize: Int = 1000) -> AsyncStream<DomainEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DomainEvent.self, bufferingPolicy: .bufferingNewest(bufferSize))
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    /// In-process subscribers now.
    var subscriberCount: Int { subscribers.count }

    package func stopped() async { finish() }

    /// Ends every subscriber's stream (shutdown, after the last publish).
    package func finish() {
        for continuation in subscribers.values { continuation.finish() }
        subscribers.removeAll()
    }

    /// Starts the shutdown drain window (`mpsc_channels.domain_events.shutdown_drain_timeout_ms`):
    /// once it has passed, events still to publish are dropped with a warning and counted as
    /// failed; step results are not affected (they are stored before their events).
    func beginShutdownDrain(timeout: Duration) {
        if drainDeadline == nil { drainDeadline = .now.advanced(by: timeout) }
    }

    /// Publishes the events `completion`'s template step declares for its result.
    package func publish(for completion: StepCompletion) async {
        guard let declarations = completion.step.definition?.publishesEvents, !declarations.isEmpty else { return }
        let result = completion.result
        for declaration in declarations where Self.matches(declaration.condition, result) {
            if let drainDeadline, ContinuousClock.now >= drainDeadline {
                StepMetrics.domainEvent(declaration.deliveryMode, published: false, in: statistics)
                logger.warning(
                    "domain event dropped: the shutdown drain timeout has passed",
                    metadata: StepLogMetadata.of(completion.step, ["event_name": "\(declaration.name)"]))
                continue
            }
            // As upstream: the payload (`result.result`) must satisfy the declared schema, else the event is skipped.
            if let schema = declaration.schema, !schema.isNull {
                let violations = JSONSchema(schema).violations(of: result.result)
                if !violations.isEmpty {
                    StepMetrics.domainEventInvalid(declaration.deliveryMode, in: statistics)
                    logger.warning(
                        "domain event skipped: its payload does not match the declared schema",
                        metadata: StepLogMetadata.of(
                            completion.step,
                            [
                                "event_name": "\(declaration.name)",
                                "violations": "\(violations.prefix(5).map(\.description).joined(separator: "; "))",
                            ]))
                    continue
                }
            }
            do {
                let event = try Self.event(declaration, completion)
                if declaration.deliveryMode != .fast {
                    let queue = QueueNames.domainEvents(namespace: completion.step.hydrated.namespace)
                    let json = try event.json.jsonString()
                    try await transport.publishEvent(json, to: queue)
                }
                if declaration.deliveryMode != .durable {
                    for continuation in subscribers.values { continuation.yield(event) }
                }
                StepMetrics.domainEvent(
                    declaration.deliveryMode, published: true, subscribers: subscribers.count, in: statistics)
            } catch {
                StepMetrics.domainEvent(declaration.deliveryMode, published: false, in: statistics)
                logger.warning(
                    "domain event not published",
                    metadata: StepLogMetadata.of(
                        completion.step,
                        [
                            "event_name": "\(declaration.name)", "error": "\(error)",
                        ]))
            }
        }
    }

    static func matches(_ condition: EventCondition, _ result: StepExecutionResult) -> Bool {
        switch condition {
        case .always: return true
        case .success: return result.isSuccess
        case .failure: return !result.isSuccess
        case .retryableFailure: return !result.isSuccess && result.isRetryable
        case .permanentFailure: return !result.isSuccess && !result.isRetryable
        }
    }

    static func event(_ declaration: EventDeclaration, _ completion: StepCompletion) throws -> DomainEvent {
        let step = completion.step
        let hydrated = step.hydrated
        let resultJSON = try JSONValue(encoding: completion.result)
        let taskSequenceStep: JSONValue = .object([
            "task": .object([
                "task_uuid": .string(hydrated.taskUUID.uuidString.lowercased()),
                "context": hydrated.taskContext, "task_name": .string(hydrated.taskName),
                "task_version": .string(hydrated.taskVersion), "namespace_name": .string(hydrated.namespace),
                "correlation_id": .string(hydrated.correlationID.uuidString.lowercased()),
            ]),
            "workflow_step": .object([
                "workflow_step_uuid": .string(hydrated.stepUUID.uuidString.lowercased()),
                "name": .string(hydrated.stepName), "template_step_name": .string(hydrated.templateStepName),
                "inputs": hydrated.inputs, "attempts": .int(Int64(step.attempts)),
                "max_attempts": .int(Int64(hydrated.maxAttempts)),
            ]),
            "dependency_results": .object(hydrated.dependencyResults),
            "step_definition": try step.definition.map { try JSONValue(encoding: $0) } ?? .null,
        ])
        let publisher = declaration.publisher ?? "DefaultDomainEventPublisher"
        let json: JSONValue = .object([
            "event_id": .string(UUID.v7().uuidString.lowercased()),
            "event_name": .string(declaration.name),
            "event_version": .string("1.0"),
            "payload": .object([
                "task_sequence_step": taskSequenceStep,
                "execution_result": resultJSON,
                "payload": resultJSON["result"] ?? .emptyObject,
            ]),
            "metadata": .object([
                "task_uuid": .string(hydrated.taskUUID.uuidString.lowercased()),
                "step_uuid": .string(hydrated.stepUUID.uuidString.lowercased()),
                "step_name": .string(hydrated.stepName),
                "namespace": .string(hydrated.namespace),
                "correlation_id": .string(hydrated.correlationID.uuidString.lowercased()),
                "fired_at": .string(RFC3339.string(Date())),
                "fired_by": .string(publisher),
            ]),
        ])
        return DomainEvent(name: declaration.name, json: json)
    }
}
