import Foundation
import TaskerHandlerSDK
import TaskerModel

/// The domain event routing figures of `GET /metrics/events` (upstream `EventRouterStats` and
/// `InProcessEventBusStats` shapes), computed from the worker's step counters
/// (`StepMetrics.domainEvent`, `domainEventInvalid`): the events are counted once, and `/metrics`
/// and `/metrics/events` read the same count.
struct DomainEventRouting: Sendable, Equatable {
    package var router: Router
    var inProcessBus: InProcessBus

    /// The figures of `counts`, with `subscribers` in-process subscribers now.
    init(_ counts: StepCounters.Values, subscribers: Int) {
        typealias Name = StepMetrics.Name
        func published(_ mode: DeliveryMode) -> UInt64 {
            UInt64(counts.total(Name.domainEventsPublished, where: "delivery_mode", is: mode.rawValue))
        }
        let (durable, fast, broadcast) = (published(.durable), published(.fast), published(.broadcast))
        let subscriberCount = UInt64(max(0, subscribers))
        router = Router(
            totalRouted: durable + fast + broadcast, durableRouted: durable, fastRouted: fast, broadcastRouted: broadcast,
            fastDeliveryErrors: UInt64(counts.total(Name.domainEventsFailed, where: "delivery_mode", is: DeliveryMode.fast.rawValue)),
            routingErrors: UInt64(counts.total(Name.domainEventsFailed)),
            schemaViolations: UInt64(counts.total(Name.domainEventsInvalid)))
        inProcessBus = InProcessBus(
            totalEventsDispatched: fast + broadcast,
            rustHandlerDispatches: UInt64(counts.total(Name.domainEventSubscriberDeliveries)), ffiChannelDispatches: 0,
            rustHandlerErrors: 0, ffiChannelDrops: 0, rustSubscriberPatterns: subscriberCount,
            rustHandlerCount: subscriberCount, ffiSubscriberCount: 0)
    }

    /// The router's counters (upstream `EventRouterStats` keys).
    package struct Router: Codable, Sendable, Equatable {
        var totalRouted: UInt64
        var durableRouted: UInt64
        var fastRouted: UInt64
        var broadcastRouted: UInt64
        var fastDeliveryErrors: UInt64
        var routingErrors: UInt64
        /// Not upstream: events skipped by schema validation.
        var schemaViolations: UInt64

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
    struct InProcessBus: Codable, Sendable, Equatable {
        var totalEventsDispatched: UInt64
        var rustHandlerDispatches: UInt64
        var ffiChannelDispatches: UInt64
        var rustHandlerErrors: UInt64
        var ffiChannelDrops: UInt64
        var rustSubscriberPatterns: UInt64
        var rustHandlerCount: UInt64
        var ffiSubscriberCount: UInt64

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
}
