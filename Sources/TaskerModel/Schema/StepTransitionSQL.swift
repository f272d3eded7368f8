import TaskerStepModel

/// The compare-and-set with which every step transition is written, by the worker (claim, result,
/// crash recovery) and by the orchestration (enqueue, completion, every other move): written once
/// here, so both sides retire and insert the same way.
///
/// It is two CTEs a statement starts its `WITH` list with (a statement may put its own CTEs before
/// them):
/// - `retired`: the step's current transition (`most_recent`), set to no longer be most recent, only
///   if every one of `conditions` holds for it; returns its `to_state` and `sort_key`, and is empty
///   when the compare-and-set lost (another writer moved the step first, or a condition failed). A
///   racing writer blocks on the row lock, then finds the row no longer most recent.
/// - `moved`: the new transition, inserted after the retired one (`sort_key + 1`, `from_state` the
///   retired `to_state`, `most_recent`), only if `retired` has a row; returns its `sort_key`.
package enum StepTransitionSQL {
    /// The two CTEs for step `step` (an SQL expression of type uuid) moving to `toState` (an SQL
    /// text expression) with `metadata` (an SQL expression cast to jsonb) when `conditions` (SQL
    /// boolean expressions over the current transition row, each written from column 0) hold.
    package static func move(step: String, to toState: String, metadata: String, when conditions: [String]) -> String {
        // Each condition on a line of its own after `AND`; its further lines indented under it.
        let guards = conditions.map { "\n       AND " + $0.split(separator: "\n").joined(separator: "\n           ") }.joined()
        return """
            retired AS (
                UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
                 WHERE workflow_step_uuid = \(step) AND most_recent\(guards)
                RETURNING to_state, sort_key),
            moved AS (
                INSERT INTO tasker.workflow_step_transitions
                    (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                SELECT \(step), \(toState), r.to_state, \(metadata)::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
                RETURNING sort_key)
            """
    }

    /// The condition that the current transition is in state `state` (an SQL text expression).
    package static func inState(_ state: String) -> String { "to_state = \(state)" }
}
