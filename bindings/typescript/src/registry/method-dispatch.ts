/** Method dispatch: a handler bound to the entry point a template's `handler.method` names. */
import { ApiHandler } from '../handler/api';
import type { ExecutableHandler } from '../handler/base';
import { StepHandler } from '../handler/base';
import { BatchableHandler } from '../handler/batchable';
import { DecisionHandler } from '../handler/decision';
import type { StepContext } from '../types/step-context';
import type { HandlerReturn } from '../types/step-handler-result';
import { MethodDispatchError } from './errors';

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Prototypes whose methods are the SDK's helpers or every object's, never a template's entry point. */
const SDK_PROTOTYPES: ReadonlySet<object> = new Set<object>([
  Object.prototype, Function.prototype, StepHandler.prototype, ApiHandler.prototype, DecisionHandler.prototype,
  BatchableHandler.prototype,
]);

/**
 * Whether a template may name `method` of `handler`: `call`, or an identifier naming a method the
 * handler's own classes define (or the handler object itself holds): never a method every object has
 * (`constructor`, `toString`, `__defineGetter__`, ...) nor the SDK's helpers (`success`, `get`, ...).
 * A template is configuration; it must not reach code the handler's author did not write as a step.
 */
export function isDispatchable(handler: object, method: string): boolean {
  if (method === 'call') return true;
  if (!IDENTIFIER.test(method) || method === 'constructor') return false;
  for (let owner: object | null = handler; owner !== null && !SDK_PROTOTYPES.has(owner); owner = Object.getPrototypeOf(owner)) {
    const found = Object.getOwnPropertyDescriptor(owner, method);
    if (found !== undefined) return typeof found.value === 'function';
  }
  return false;
}

/** Runs `handler[method](context)` as the step's `call`. */
export class MethodDispatchWrapper implements ExecutableHandler {
  readonly handler: ExecutableHandler;
  readonly targetMethod: string;
  private readonly method: (context: StepContext) => Promise<HandlerReturn> | HandlerReturn;

  /** @throws MethodDispatchError when the handler has no such method. */
  constructor(handler: ExecutableHandler, targetMethod: string, callable: string) {
    const method = isDispatchable(handler, targetMethod)
      ? (handler as unknown as Record<string, unknown>)[targetMethod]
      : undefined;
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
