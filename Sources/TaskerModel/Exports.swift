// The step's wire data (JSON, results, failures, handler definitions) is part of the model a
// client of TaskerModel sees.
@_exported import TaskerStepModel
