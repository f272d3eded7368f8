/** Turning what a handler threw or returned into a StepHandlerResult. */
import { ErrorType } from '../types/error-type';
import { isObject } from '../types/json';
import { StepHandlerResult } from '../types/step-handler-result';

/** The name of a thrown error: its `name`, or its class name when `name` is just "Error". */
export function errorName(error: unknown): string {
  if (error instanceof Error) {
    const className = error.constructor?.name;
    if (error.name === 'Error' && className && className !== 'Error') return className;
    return error.name || 'Error';
  }
  return typeof error;
}

/**
 * A thrown error as a failure (as upstream's TS worker does): retryable, error_type the error's
 * name, its message, and `metadata.custom` `{exception_type, stack}` (the keys `tasker-dev task
 * show` and the console read: `exception_type` as the Python SDK, `stack` for TypeScript).
 */
export function thrownErrorResult(error: unknown): StepHandlerResult {
  if (error instanceof Error) {
    const name = errorName(error);
    return StepHandlerResult.failure(error.message || name, name, true, { exception_type: name, stack: error.stack ?? `${name}: ${error.message}` });
  }
  let text: string;
  try {
    text = typeof error === 'string' ? error : JSON.stringify(error) ?? String(error);
  } catch {
    text = String(error);
  }
  return StepHandlerResult.failure(`handler threw a non-Error value: ${text}`, ErrorType.HANDLER_ERROR, true, { exception_type: typeof error });
}

/**
 * What a handler returned as a result: a StepHandlerResult as is, a plain object as success,
 * nothing as success `{}`; anything else is a permanent handler_error naming what came back.
 */
export function returnedResult(value: unknown, callable: string): StepHandlerResult {
  if (value instanceof StepHandlerResult) return value;
  if (value === undefined || value === null) return StepHandlerResult.success({});
  if (isObject(value)) return StepHandlerResult.success(value);
  const kind = Array.isArray(value) ? 'an array' : typeof value;
  return StepHandlerResult.failure(
    `handler for callable '${callable}' returned ${kind}; expected a StepHandlerResult, a plain object or nothing`,
    ErrorType.HANDLER_ERROR,
    false
  );
}
