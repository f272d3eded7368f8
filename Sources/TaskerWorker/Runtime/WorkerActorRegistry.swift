import Foundation
import Logging
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// An actor of the worker with lifecycle hooks, called by `WorkerActorRegistry`.
protocol WorkerActor: Actor {
    var actorName: String { get }
    /// Called once before the worker processes anything.
    func started() async
    /// Called once after the pipeline has drained.
    func stopped() async
}

extension WorkerActor {
    package func started() async {}
    package func stopped() async {}
}

/// The worker's actors: the components whose state needs an actor's isolation, built once with all
/// their dependencies (no half-initialised state), with their lifecycle hooks. Today one: the
/// domain event publisher (its subscribers and its drain deadline). Components whose state is a lock
/// or an atomic (the step executor, the capacity, the FFI channel) are not actors and are not here.
struct WorkerActorRegistry: Sendable {
    package let domainEvents: DomainEventActor

    package init(domainEvents: DomainEventActor) {
        self.domainEvents = domainEvents
    }

    private var all: [any WorkerActor] { [domainEvents] }

    /// Runs every actor's `started()` hook, in dependency order.
    func startAll() async {
        for actor in all { await actor.started() }
    }

    /// Runs every actor's `stopped()` hook, in reverse order.
    func stopAll() async {
        for actor in all.reversed() { await actor.stopped() }
    }
}
