/** Method dispatch: a handler bound to the entry point a template's `handler.method` names. */
import type { ExecutableHandler } from '../handler/base';
import type { StepContext } from '../types/step-context';
import type { HandlerReturn } from '../types/step-handler-result';
import { MethodDispatchError } from './errors';

/** Runs `handler[method](context)` as the step's `call`. */
export class MethodDispatchWrapper implements ExecutableHandler {
  readonly handler: ExecutableHandler;
  readonly targetMethod: string;
  private readonly method: (context: StepContext) => Promise<HandlerReturn> | HandlerReturn;

  /** @throws MethodDispatchError when the handler has no such method. */
  constructor(handler: ExecutableHandler, targetMethod: string, callable: string) {
    const method = (handler as unknown as Record<string, unknown>)[targetMethod];
    if (typeof method !== 'function') throw new MethodDispatchError(callable, handler.name, targetMethod);
    this.handler = handler;
    this.targetMethod = targetMethod;
    this.method = method.bind(handler) as (context: StepContext) => Promise<HandlerReturn> | HandlerReturn;
  }

  get name(): string {
    return this.handler.name;
  }

  get version(): string {
    return this.handler.version;
  }

  call(context: StepContext): Promise<HandlerReturn> | HandlerReturn {
    return this.method(context);
  }
}
