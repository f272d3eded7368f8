import TaskerPostgres
import TaskerStore
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Next to upstream's worker (issue #15): our completion never stores a result over a claim that is
/// not its own, while crash recovery stores over the claim it saw, by the statements alone. (The mixed
/// fleet on one database: `MixedFleetTests` in TaskerSystemTests.)
@Suite(.serialized, .timeLimit(.minutes(2))) struct OwnClaimConditionTests {
    /// The completion only ever retires the writer's own claim; crash recovery (which stores for a
    /// dead claimer, on the transition it saw) leaves that condition out.
    @Test func theOwnClaimConditionIsInTheCompletionAndNotInRecovery() {
        let ownClaim = "AND metadata->>'worker_uuid' = ($3::jsonb)->>'worker_uuid'"
        for statement in [
            ResultStatement.functions, .broker, StepQueueStatements(layouts: [QueueNames.stepResults: .withLastReadAt]).result,
        ] {
            #expect(statement.statement.sql.contains(ownClaim), "\(statement.statement.name)")
        }
        for statement in [ResultStatement.recoverFunctions, .recoverBroker] {
            #expect(!statement.statement.sql.contains(ownClaim), "\(statement.statement.name)")
            #expect(statement.statement.sql.contains("workflow_step_transition_uuid = $5::uuid"))
        }
    }
}
