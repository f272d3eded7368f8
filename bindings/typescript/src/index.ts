/**
 * @tasker-swift/worker — TypeScript step handlers on the embedded Swift Tasker worker.
 * See README.md for a first handler.
 */
export { TaskerError, TaskerStatus } from './ffi/errors';
export { library, LogLevel, TaskerLibrary } from './ffi/library';
export type { BootstrapConfig, BootstrapResult } from './ffi/library';
export { addonPath, loadNative } from './ffi/native';
export type { NativeAddon } from './ffi/native';

export { StepHandler } from './handler/base';
export type { ExecutableHandler, StepHandlerClass } from './handler/base';
export { ApiHandler } from './handler/api';
export { ApiClient, ApiResponse, ApiTimeoutError, apiFailure, apiSuccess, connectionFailure } from './handler/api-client';
export type { ApiBodyOptions, ApiClientOptions } from './handler/api-client';
export { DecisionHandler, decisionResult, noBranchesResult } from './handler/decision';
export type { DecisionPointOutcome } from './handler/decision';
export { BatchableHandler } from './handler/batchable';
export {
  Decision,
  defineApiHandler,
  defineBatchAnalyzer,
  defineBatchWorker,
  defineDecisionHandler,
  defineHandler,
  PermanentError,
  RetryableError,
} from './handler/functional';
export type { ApiHandlerOptions, BatchConfig, HandlerArgs, HandlerOptions } from './handler/functional';

export { HandlerRegistry } from './registry/handler-registry';
export { ResolverChain } from './registry/resolver-chain';
export type { BaseResolver } from './registry/resolver';
export { ExplicitMappingResolver } from './registry/resolvers/explicit-mapping';
export type { HandlerEntry, HandlerFactory } from './registry/resolvers/explicit-mapping';
export { ClassLookupResolver } from './registry/resolvers/class-lookup';
export { MethodDispatchWrapper } from './registry/method-dispatch';
export { MethodDispatchError, ResolutionError, ResolverNotFoundError } from './registry/errors';
export { definitionFrom, definitionOf, effectiveMethod, hasResolverHint, usesMethodDispatch } from './registry/handler-definition';
export type { HandlerDefinition } from './registry/handler-definition';

export { aggregateBatchResults, createBatches, cursorConfigs, noBatches } from './types/batch';
export type { BatchCursor, BatchProcessingOutcome } from './types/batch';
export { ErrorType, isTypicallyRetryable } from './types/error-type';
export { isObject } from './types/json';
export type { JsonObject, JsonValue } from './types/json';
export { StepContext } from './types/step-context';
export type { Checkpoint } from './types/step-context';
export { parseStepEvent, StepEventError } from './types/step-event';
export type { StepEvent } from './types/step-event';
export { StepHandlerResult } from './types/step-handler-result';
export type { CheckpointData, HandlerReturn } from './types/step-handler-result';

export { Worker } from './worker/worker';
export type { RunOptions, WorkerOptions } from './worker/worker';
export { DomainEventSubscriber } from './worker/domain-events';
export type { DomainEvent, DomainEventListener } from './worker/domain-events';
export { EventPoller } from './worker/event-poller';
export type { EventPollerOptions } from './worker/event-poller';
export { serialize } from './worker/completion';
export { errorName, returnedResult, thrownErrorResult } from './worker/error-result';
export { StepExecutor } from './worker/step-executor';

export { TaskerClient, TaskerClientError } from './client/tasker-client';
export type { CreateTaskOptions, ListTasksOptions } from './client/tasker-client';
