/**
 * Runs the handler of one step event: resolves it through the registry and calls its entry point.
 * Every path gives a StepHandlerResult; nothing it does throws.
 */
import type { HandlerRegistry } from '../registry/handler-registry';
import { MethodDispatchError, ResolverNotFoundError } from '../registry/errors';
import { definitionFrom } from '../registry/handler-definition';
import { ErrorType } from '../types/error-type';
import { StepContext } from '../types/step-context';
import { handlerOf, type StepEvent } from '../types/step-event';
import { StepHandlerResult } from '../types/step-handler-result';
import { returnedResult, thrownErrorResult } from './error-result';

/** Resolves and runs handlers. */
export class StepExecutor {
  constructor(private readonly registry: HandlerRegistry) {}

  /** The step's outcome (a failure when the handler is missing, throws or returns nonsense). */
  async execute(event: StepEvent, onStart?: (context: StepContext) => void): Promise<StepHandlerResult> {
    const definition = definitionFrom(handlerOf(event));
    let handler;
    try {
      handler = await this.registry.resolve(definition);
    } catch (error) {
      if (error instanceof ResolverNotFoundError) {
        return StepHandlerResult.failure(error.message, ErrorType.RESOLVER_NOT_FOUND, false);
      }
      if (error instanceof MethodDispatchError) {
        return StepHandlerResult.failure(error.message, ErrorType.METHOD_NOT_FOUND, false);
      }
      const failed = thrownErrorResult(error);
      return StepHandlerResult.failure(
        `resolving the handler of callable '${definition.callable}' failed: ${failed.errorMessage ?? ''}`,
        failed.errorType ?? ErrorType.HANDLER_ERROR, true, failed.metadata);
    }
    if (handler === null) {
      const hint = definition.resolver !== null ? ` by resolver '${definition.resolver}'` : '';
      return StepHandlerResult.failure(
        `no TypeScript handler found${hint} for callable '${definition.callable}'`,
        ErrorType.HANDLER_NOT_FOUND, false);
    }
    try {
      const context = new StepContext(event);
      onStart?.(context);
      return returnedResult(await handler.call(context), definition.callable);
    } catch (error) {
      return thrownErrorResult(error);
    }
  }
}
