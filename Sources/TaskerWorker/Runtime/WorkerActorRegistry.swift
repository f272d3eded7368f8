import Foundation
import Logging
import TaskerModel
import TaskerPostgres

/// An actor of the worker with lifecycle hooks, called by `WorkerActorRegistry`.
package protocol WorkerActor: Actor {
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

/// The worker's actors that own state, built once with all their dependencies (no
/// half-initialised state): the step executor (in-flight steps, claiming on/off) and the domain
/// event publisher (subscribers).
package struct WorkerActorRegistry: Sendable {
    package let stepExecutor: StepExecutorActor
    package let domainEvents: DomainEventActor

    package init(stepExecutor: StepExecutorActor, domainEvents: DomainEventActor) {
        self.stepExecutor = stepExecutor
        self.domainEvents = domainEvents
    }

    private var all: [any WorkerActor] { [domainEvents, stepExecutor] }

    /// Runs every actor's `started()` hook, in dependency order.
    package func startAll() async {
        for actor in all { await actor.started() }
    }

    /// Runs every actor's `stopped()` hook, in reverse order.
    package func stopAll() async {
        for actor in all.reversed() { await actor.stopped() }
    }
}
