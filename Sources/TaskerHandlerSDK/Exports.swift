// A handler sees the step's wire data (JSONValue, StepExecutionResult, StepFailure …) with the API.
@_exported import TaskerStepModel
