/**
 * Standard error types (upstream's `ErrorType`): the `error_type` of a failure result, stored in
 * `error.error_type` and `metadata.error_type`.
 */
export enum ErrorType {
  /** Permanent, non-recoverable failure (invalid input, resource not found, authentication). */
  PERMANENT_ERROR = 'permanent_error',
  /** Transient failure that may succeed on retry (network, service unavailable, rate limit). */
  RETRYABLE_ERROR = 'retryable_error',
  /** Input validation failure. */
  VALIDATION_ERROR = 'validation_error',
  /** Operation timed out. */
  TIMEOUT = 'timeout',
  /** Failure within the step handler itself. */
  HANDLER_ERROR = 'handler_error',
  /** No handler for the step's callable. */
  HANDLER_NOT_FOUND = 'handler_not_found',
  /** The step's `handler.method` names no method of the handler. */
  METHOD_NOT_FOUND = 'method_not_found',
  /** The step's `handler.resolver` names no registered resolver. */
  RESOLVER_NOT_FOUND = 'resolver_not_found',
  /** The step event could not be read. */
  EVENT_ERROR = 'event_error',
  /** A checkpoint could not be stored. */
  CHECKPOINT_ERROR = 'checkpoint_error',
}

/** True when `errorType` is usually worth retrying (`retryable_error`, `timeout`). */
export function isTypicallyRetryable(errorType: string): boolean {
  return errorType === ErrorType.RETRYABLE_ERROR || errorType === ErrorType.TIMEOUT;
}
