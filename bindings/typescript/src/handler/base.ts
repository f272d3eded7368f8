/** The class-style handler API (upstream's `StepHandler`). */
import { ErrorType } from '../types/error-type';
import type { JsonObject } from '../types/json';
import type { StepContext } from '../types/step-context';
import { StepHandlerResult, type HandlerReturn } from '../types/step-handler-result';

/** What the worker runs: a handler, or a handler bound to one method (method dispatch). */
export interface ExecutableHandler {
  readonly name: string;
  readonly version: string;
  call(context: StepContext): Promise<HandlerReturn> | HandlerReturn;
}

/** A handler class: `static handlerName` (the template's `handler.callable`), a no-argument constructor. */
export interface StepHandlerClass {
  handlerName: string;
  handlerVersion?: string;
  new (): StepHandler;
}

/**
 * Base class of step handlers.
 *
 * ```ts
 * class ChargeHandler extends StepHandler {
 *   static handlerName = 'payments.charge';
 *   async call(context: StepContext) {
 *     return this.success({ charged: context.getInput('amount') });
 *   }
 * }
 * ```
 *
 * A template step with `handler.method: refund` runs `refund(context)` instead of `call`.
 * Throwing is a retryable failure whose error_type is the error's name (see the README).
 */
export abstract class StepHandler implements ExecutableHandler {
  /** The template's `handler.callable` this class handles. */
  static handlerName: string;
  /** Reported in logs; default "1.0.0". */
  static handlerVersion = '1.0.0';

  /** Runs the step. */
  abstract call(context: StepContext): Promise<HandlerReturn> | HandlerReturn;

  /** The class's handlerName (or its class name). */
  get name(): string {
    const ctor = this.constructor as typeof StepHandler;
    return ctor.handlerName || ctor.name;
  }

  /** The class's handlerVersion. */
  get version(): string {
    return (this.constructor as typeof StepHandler).handlerVersion;
  }

  /** A success result. */
  protected success(result: JsonObject = {}, metadata?: JsonObject): StepHandlerResult {
    return StepHandlerResult.success(result, metadata);
  }

  /** A failure result (retryable by default, as upstream). */
  protected failure(
    message: string,
    errorType: ErrorType | string = ErrorType.HANDLER_ERROR,
    retryable = true,
    metadata?: JsonObject,
    errorCode?: string
  ): StepHandlerResult {
    return StepHandlerResult.failure(message, errorType, retryable, metadata, errorCode);
  }

  /** A checkpoint yield: progress is persisted and the step runs again with `context.checkpoint`. */
  protected checkpointYield(cursor: unknown, itemsProcessed = 0, accumulatedResults: unknown = null): StepHandlerResult {
    return StepHandlerResult.checkpoint(cursor, itemsProcessed, accumulatedResults);
  }

  toString(): string {
    return `${this.constructor.name}(name=${this.name}, version=${this.version})`;
  }
}
