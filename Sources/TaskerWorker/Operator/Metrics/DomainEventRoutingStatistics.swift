import Atomics
import Foundation
import TaskerModel

/// Per-publisher counts of domain event routing, for `GET /metrics/events` (upstream
/// `EventRouterStats` and `InProcessEventBusStats` shapes). The Prometheus counters of the same
/// events are the worker's step counters (`StepMetrics.domainEvent`, called beside these).
package final class DomainEventRoutingStatistics: Sendable {
    private let durable = ManagedAtomic<UInt64>(0)
    private let fast = ManagedAtomic<UInt64>(0)
    private let broadcast = ManagedAtomic<UInt64>(0)
    private let routingErrors = ManagedAtomic<UInt64>(0)
    private let fastErrors = ManagedAtomic<UInt64>(0)
    private let invalidEvents = ManagedAtomic<UInt64>(0)
    private let inProcessEvents = ManagedAtomic<UInt64>(0)
    private let subscriberDeliveries = ManagedAtomic<UInt64>(0)

    package init() {}

    /// An event published with `mode`; `subscribers` in-process subscribers got it (fast, broadcast).
    package func routed(_ mode: DeliveryMode, subscribers: Int) {
        switch mode {
        case .durable: durable.wrappingIncrement(ordering: .relaxed)
        case .fast: fast.wrappingIncrement(ordering: .relaxed)
        case .broadcast: broadcast.wrappingIncrement(ordering: .relaxed)
        }
        if mode != .durable {
            inProcessEvents.wrappingIncrement(ordering: .relaxed)
            subscriberDeliveries.wrappingIncrement(by: UInt64(max(0, subscribers)), ordering: .relaxed)
        }
    }

    /// An event that could not be published.
    package func failed(_ mode: DeliveryMode) {
        routingErrors.wrappingIncrement(ordering: .relaxed)
        if mode == .fast { fastErrors.wrappingIncrement(ordering: .relaxed) }
    }

    /// An event skipped because its payload violates the declared schema.
    package func invalid(_ mode: DeliveryMode) {
        invalidEvents.wrappingIncrement(ordering: .relaxed)
    }

    /// The router's counters (upstream `EventRouterStats` keys).
    package struct Router: Codable, Sendable, Equatable {
        package var totalRouted: UInt64
        package var durableRouted: UInt64
        package var fastRouted: UInt64
        package var broadcastRouted: UInt64
        package var fastDeliveryErrors: UInt64
        package var routingErrors: UInt64
        /// Not upstream: events skipped by schema validation.
        package var schemaViolations: UInt64

        enum CodingKeys: String, CodingKey {
            case totalRouted = "total_routed"
            case durableRouted = "durable_routed"
            case fastRouted = "fast_routed"
            case broadcastRouted = "broadcast_routed"
            case fastDeliveryErrors = "fast_delivery_errors"
            case routingErrors = "routing_errors"
            case schemaViolations = "schema_violations"
        }
    }

    /// The in-process bus's counters (upstream `InProcessEventBusStats` keys; the `rust_handler_*`
    /// fields count this worker's in-process subscribers, the `ffi_*` fields stay 0).
    package struct InProcessBus: Codable, Sendable, Equatable {
        package var totalEventsDispatched: UInt64
        package var rustHandlerDispatches: UInt64
        package var ffiChannelDispatches: UInt64
        package var rustHandlerErrors: UInt64
        package var ffiChannelDrops: UInt64
        package var rustSubscriberPatterns: UInt64
        package var rustHandlerCount: UInt64
        package var ffiSubscriberCount: UInt64

        enum CodingKeys: String, CodingKey {
            case totalEventsDispatched = "total_events_dispatched"
            case rustHandlerDispatches = "rust_handler_dispatches"
            case ffiChannelDispatches = "ffi_channel_dispatches"
            case rustHandlerErrors = "rust_handler_errors"
            case ffiChannelDrops = "ffi_channel_drops"
            case rustSubscriberPatterns = "rust_subscriber_patterns"
            case rustHandlerCount = "rust_handler_count"
            case ffiSubscriberCount = "ffi_subscriber_count"
        }
    }

    /// The router counters now.
    package var router: Router {
        let (d, f, b) = (durable.load(ordering: .relaxed), fast.load(ordering: .relaxed), broadcast.load(ordering: .relaxed))
        return Router(
            totalRouted: d + f + b, durableRouted: d, fastRouted: f, broadcastRouted: b,
            fastDeliveryErrors: fastErrors.load(ordering: .relaxed),
            routingErrors: routingErrors.load(ordering: .relaxed),
            schemaViolations: invalidEvents.load(ordering: .relaxed))
    }

    /// The in-process bus counters now, with the current number of subscribers.
    package func inProcessBus(subscribers: Int) -> InProcessBus {
        InProcessBus(
            totalEventsDispatched: inProcessEvents.load(ordering: .relaxed),
            rustHandlerDispatches: subscriberDeliveries.load(ordering: .relaxed), ffiChannelDispatches: 0,
            rustHandlerErrors: 0, ffiChannelDrops: 0, rustSubscriberPatterns: UInt64(max(0, subscribers)),
            rustHandlerCount: UInt64(max(0, subscribers)), ffiSubscriberCount: 0)
    }
}
