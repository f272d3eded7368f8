/** Turning what a handler threw or returned into a StepHandlerResult. */
import { ErrorType } from '../types/error-type';
import { isObject } from '../types/json';
import { StepHandlerResult } from '../types/step-handler-result';

/** `read()`, or `fallback` when reading throws (hostile getters, revoked proxies, ...). */
function safely<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

/** True for an Error, also one of another realm (vm context, worker) where `instanceof` fails. */
function isError(value: unknown): value is Error {
  return safely(() => value instanceof Error || Object.prototype.toString.call(value) === '[object Error]', false);
}

/** The longest text a non-Error thrown value is described with. */
const MAX_DESCRIPTION = 4096;

/** A thrown non-Error value as text (JSON when it has one), never throwing. */
function describeValue(value: unknown): string {
  let text: string | null = typeof value === 'string' ? value : null;
  if (text === null) text = safely(() => { const json = JSON.stringify(value); return typeof json === 'string' ? json : null; }, null);
  if (text === null) text = safely(() => String(value), null);
  if (text === null) text = safely(() => Object.prototype.toString.call(value), '(a value that cannot be shown)');
  return text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION)}…` : text;
}

/** The name of a thrown error: its `name`, or its class name when `name` is just "Error". */
export function errorName(error: unknown): string {
  return safely(() => {
    if (isError(error)) {
      const name = safely(() => (typeof error.name === 'string' ? error.name : ''), '');
      const className = safely(() => {
        const ctor = (error as { constructor?: { name?: unknown } }).constructor;
        return typeof ctor?.name === 'string' ? ctor.name : '';
      }, '');
      if ((name === 'Error' || name === '') && className && className !== 'Error') return className;
      return name || 'Error';
    }
    return error === null ? 'null' : typeof error;
  }, 'Error');
}

/**
 * A thrown error as a failure (as upstream's TS worker does): retryable, error_type the error's
 * name, its message, and `metadata.custom` `{exception_type, stack}` (the keys `tasker-dev task
 * show` and the console read: `exception_type` as the Python SDK, `stack` for TypeScript).
 * Never throws, whatever was thrown (`throw 42`, `throw null`, an error whose getters throw).
 */
export function thrownErrorResult(error: unknown): StepHandlerResult {
  if (isError(error)) {
    const name = errorName(error);
    const message = safely(() => {
      const value: unknown = error.message;
      return typeof value === 'string' ? value : describeValue(value);
    }, '');
    const stack = safely(() => (typeof error.stack === 'string' ? error.stack : null), null) ?? `${name}: ${message}`;
    return StepHandlerResult.failure(message || name, name, true, { exception_type: name, stack });
  }
  return StepHandlerResult.failure(`handler threw a non-Error value: ${describeValue(error)}`, ErrorType.HANDLER_ERROR, true,
    { exception_type: error === null ? 'null' : typeof error });
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
