/**
 * What a handler returns ({@link StepHandlerResult}) and the `StepExecutionResult` document the
 * worker stores for it (same shape as the Python SDK's).
 */
import type { JsonObject } from './json';
import { ErrorType } from './error-type';

/** A checkpoint to persist before the step runs again (see {@link StepHandlerResult.checkpoint}). */
export interface CheckpointData {
  cursor: unknown;
  items_processed: number;
  accumulated_results: unknown;
}

/** Constructor parameters of {@link StepHandlerResult}. */
export interface StepHandlerResultParams {
  success: boolean;
  result?: JsonObject | null;
  errorMessage?: string | null;
  errorType?: string | null;
  errorCode?: string | null;
  retryable?: boolean;
  metadata?: JsonObject;
  checkpoint?: CheckpointData | null;
}

/** A handler's outcome: success, failure, or a checkpoint yield. */
export class StepHandlerResult {
  readonly success: boolean;
  readonly result: JsonObject | null;
  readonly errorMessage: string | null;
  readonly errorType: string | null;
  readonly errorCode: string | null;
  /** Whether orchestration retries a failure (up to the step's max_attempts). */
  readonly retryable: boolean;
  /** Handler metadata: stored as the result's `metadata.custom`. */
  readonly metadata: JsonObject;
  /** Set for a checkpoint yield: the step is persisted and dispatched again. */
  readonly checkpoint: CheckpointData | null;

  constructor(params: StepHandlerResultParams) {
    this.success = params.success;
    this.result = params.result ?? null;
    this.errorMessage = params.errorMessage ?? null;
    this.errorType = params.errorType ?? null;
    this.errorCode = params.errorCode ?? null;
    this.retryable = params.retryable ?? true;
    this.metadata = params.metadata ?? {};
    this.checkpoint = params.checkpoint ?? null;
  }

  /** The step succeeded with `result` (its dependants read it). */
  static success(result: JsonObject = {}, metadata?: JsonObject): StepHandlerResult {
    return new StepHandlerResult({ success: true, result, metadata: metadata ?? {} });
  }

  /**
   * The step failed; retried when `retryable` (default true) until its max_attempts.
   */
  static failure(
    message: string,
    errorType: ErrorType | string = ErrorType.HANDLER_ERROR,
    retryable = true,
    metadata?: JsonObject,
    errorCode?: string
  ): StepHandlerResult {
    return new StepHandlerResult({
      success: false,
      errorMessage: message,
      errorType,
      errorCode: errorCode ?? null,
      retryable,
      metadata: metadata ?? {},
    });
  }

  /** Yield: persist progress and run the step again with this checkpoint in its context. */
  static checkpoint(cursor: unknown, itemsProcessed = 0, accumulatedResults: unknown = null): StepHandlerResult {
    return new StepHandlerResult({
      success: true,
      checkpoint: { cursor, items_processed: Math.max(0, Math.trunc(itemsProcessed)), accumulated_results: accumulatedResults },
    });
  }

  isSuccess(): boolean {
    return this.success;
  }

  isFailure(): boolean {
    return !this.success;
  }

  /**
   * The `StepExecutionResult` document for `tasker_complete_step_event`.
   */
  toExecutionResult(stepUuid: string, executionTimeMs: number, workerId: string | null): JsonObject {
    const metadata: JsonObject = {
      execution_time_ms: Math.max(0, Math.round(executionTimeMs)),
      retryable: this.success ? false : this.retryable,
      worker_id: workerId,
      custom: { ...this.metadata },
    };
    if (this.success) {
      return { step_uuid: stepUuid, success: true, status: 'completed', result: this.result ?? {}, metadata };
    }
    const errorType = this.errorType ?? ErrorType.HANDLER_ERROR;
    metadata.error_type = errorType;
    metadata.error_code = this.errorCode;
    return {
      step_uuid: stepUuid,
      success: false,
      status: 'failed',
      result: {},
      metadata,
      error: { message: this.errorMessage ?? 'Unknown error', error_type: errorType, retryable: this.retryable },
    };
  }
}

/**
 * What a handler may return: a StepHandlerResult, a plain object (success with that result) or
 * nothing (success with `{}`).
 */
export type HandlerReturn = StepHandlerResult | JsonObject | undefined | null | void;
