// The operator surface's auth lives in `TaskerAuth`, shared with the orchestration's REST API (its HTTP
// pieces, `TaskerHTTP`, are not re-exported: a handler never needs them).
@_exported import TaskerAuth
// The handler API (StepHandler, StepContext, HandlerRegistry …) is its own small module, shared with
// `TaskerHandlerHost` (handlers run on a prebuilt worker through the C ABI library): a handler file
// compiles against either.
@_exported import TaskerHandlerSDK
// A handler author imports one module: the SDK's signatures use the model's types (`JSONValue`,
// `StepMessage`, `StepExecutionResult`, templates, configuration), so `TaskerWorker` re-exports
// `TaskerModel`. The PostgreSQL client (`TaskerPostgres`) is not re-exported: handlers never need it.
@_exported import TaskerModel
