import TaskerPostgres

/// A task's state as stored in `tasker.task_transitions.to_state`: a text that is not one of
/// ``TaskState`` is a decoding error naming the column and the value.
extension TaskState: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> TaskState {
        guard let state = TaskState(rawValue: try String.decode(from: cell)) else { throw cell.decodingError("a task state") }
        return state
    }
}

/// A step's state as stored in `tasker.workflow_step_transitions.to_state`: a text that is not one
/// of ``StepState`` is a decoding error naming the column and the value.
extension StepState: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresError) -> StepState {
        guard let state = StepState(rawValue: try String.decode(from: cell)) else { throw cell.decodingError("a step state") }
        return state
    }
}
