/**
 * The function style (upstream's `defineHandler` & co.): a handler is a function of
 * `{context, ...injected}`; each `define*` returns a handler class for the registry.
 *
 * ```ts
 * const Square = defineHandler('math.square', { inputs: { n: 'number' } }, async ({ n }) => ({ value: Number(n) ** 2 }));
 * ```
 *
 * Return a plain object (success), nothing (success `{}`) or a StepHandlerResult. Throw
 * {@link PermanentError} / {@link RetryableError} for classified failures; any other error is
 * treated like one thrown from a class handler (retryable, error_type = its name, stack kept).
 */
import { ErrorType } from '../types/error-type';
import { cursorConfigs, createBatches, type BatchCursor } from '../types/batch';
import { isObject, type JsonObject } from '../types/json';
import type { StepContext } from '../types/step-context';
import { StepHandlerResult, type HandlerReturn } from '../types/step-handler-result';
import { ApiClient } from './api-client';
import { StepHandler, type StepHandlerClass } from './base';
import { decisionResult, noBranchesResult } from './decision';

/** Throw to fail the step for good. */
export class PermanentError extends Error {
  readonly metadata: JsonObject;
  constructor(message: string, metadata?: JsonObject) {
    super(message);
    this.name = 'PermanentError';
    this.metadata = metadata ?? {};
  }
}

/** Throw to fail the step so that it is retried. */
export class RetryableError extends Error {
  readonly metadata: JsonObject;
  constructor(message: string, metadata?: JsonObject) {
    super(message);
    this.name = 'RetryableError';
    this.metadata = metadata ?? {};
  }
}

/** What to inject: `depends: {param: stepName}` (parent results), `inputs: {param: contextKey}`. */
export interface HandlerOptions {
  depends?: Record<string, string>;
  inputs?: Record<string, string>;
  version?: string;
}

/** The argument of a functional handler. */
export type HandlerArgs = Record<string, unknown> & { context: StepContext };

/** A decision of {@link defineDecisionHandler}. */
export class Decision {
  private constructor(
    readonly type: 'create_steps' | 'no_branches',
    readonly steps: string[],
    readonly reason: string | undefined,
    readonly routingContext: JsonObject
  ) {}

  /** Create the named steps. */
  static route(steps: string[], routingContext: JsonObject = {}): Decision {
    return new Decision('create_steps', [...steps], undefined, routingContext);
  }

  /** Create no step. */
  static skip(reason: string, routingContext: JsonObject = {}): Decision {
    return new Decision('no_branches', [], reason, routingContext);
  }
}

/** What a batch analyzer function returns (or a StepHandlerResult). */
export interface BatchConfig {
  totalItems: number;
  batchSize: number;
  /** At most this many workers (batches are widened). */
  maxWorkers?: number;
  /** Merged into the analyzer's result. */
  extra?: JsonObject;
}

function injectArgs(context: StepContext, options: HandlerOptions): HandlerArgs {
  const args: HandlerArgs = { context };
  for (const [param, stepName] of Object.entries(options.depends ?? {})) args[param] = context.getDependencyResult(stepName);
  for (const [param, key] of Object.entries(options.inputs ?? {})) args[param] = context.getInput(key);
  return args;
}

/** Maps the classified errors to results; anything else propagates to the worker. */
async function classified(run: () => Promise<HandlerReturn>): Promise<HandlerReturn> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof PermanentError) {
      return StepHandlerResult.failure(error.message, ErrorType.PERMANENT_ERROR, false, error.metadata);
    }
    if (error instanceof RetryableError) {
      return StepHandlerResult.failure(error.message, ErrorType.RETRYABLE_ERROR, true, error.metadata);
    }
    throw error;
  }
}

/** A handler class named `name` whose `call` runs `body`. */
function handlerClass(name: string, version: string, body: (context: StepContext) => Promise<HandlerReturn>): StepHandlerClass {
  const HandlerClass = class extends StepHandler {
    static override handlerName = name;
    static override handlerVersion = version;
    async call(context: StepContext): Promise<HandlerReturn> {
      return classified(() => body(context));
    }
  };
  Object.defineProperty(HandlerClass, 'name', { value: name });
  return HandlerClass;
}

/** A plain handler. */
export function defineHandler(
  name: string,
  options: HandlerOptions,
  fn: (args: HandlerArgs) => Promise<HandlerReturn> | HandlerReturn
): StepHandlerClass {
  return handlerClass(name, options.version ?? '1.0.0', async (context) => fn(injectArgs(context, options)));
}

/** A decision handler: `fn` returns `Decision.route([...])`, `Decision.skip(reason)` or a result. */
export function defineDecisionHandler(
  name: string,
  options: HandlerOptions,
  fn: (args: HandlerArgs) => Promise<Decision | StepHandlerResult> | Decision | StepHandlerResult
): StepHandlerClass {
  const version = options.version ?? '1.0.0';
  return handlerClass(name, version, async (context) => {
    const outcome = await fn(injectArgs(context, options));
    if (!(outcome instanceof Decision)) return outcome;
    const metadata = { decision_handler: name, decision_version: version };
    return outcome.type === 'create_steps'
      ? decisionResult(outcome.steps, outcome.routingContext, metadata)
      : noBranchesResult(outcome.reason, outcome.routingContext, metadata);
  });
}

/** A batch analyzer: `fn` returns a {@link BatchConfig}; the result creates `workerTemplate` steps. */
export function defineBatchAnalyzer(
  name: string,
  options: HandlerOptions & { workerTemplate: string },
  fn: (args: HandlerArgs) => Promise<BatchConfig | StepHandlerResult> | BatchConfig | StepHandlerResult
): StepHandlerClass {
  return handlerClass(name, options.version ?? '1.0.0', async (context) => {
    const config = await fn(injectArgs(context, options));
    if (config instanceof StepHandlerResult) return config;
    if (!isObject(config)) throw new TypeError(`batch analyzer ${name} returned no BatchConfig`);
    const configs = cursorConfigs(config.totalItems, config.batchSize, config.maxWorkers);
    return createBatches(options.workerTemplate, configs, config.totalItems, config.extra ?? {});
  });
}

/** A batch worker: `fn` gets `batchCursor` (null for the no-op worker of an empty batch). */
export function defineBatchWorker(
  name: string,
  options: HandlerOptions,
  fn: (args: HandlerArgs & { batchCursor: BatchCursor | null }) => Promise<HandlerReturn> | HandlerReturn
): StepHandlerClass {
  return handlerClass(name, options.version ?? '1.0.0', async (context) => {
    const batchCursor = context.isNoOpBatch ? null : context.batchCursor;
    return fn({ ...injectArgs(context, options), batchCursor });
  });
}

/** Settings of {@link defineApiHandler}. */
export interface ApiHandlerOptions extends HandlerOptions {
  baseUrl: string;
  defaultTimeout?: number;
  defaultHeaders?: Record<string, string>;
}

/** An API handler: `fn` gets `api`, an {@link ApiClient} for `baseUrl`. */
export function defineApiHandler(
  name: string,
  options: ApiHandlerOptions,
  fn: (args: HandlerArgs & { api: ApiClient }) => Promise<HandlerReturn> | HandlerReturn
): StepHandlerClass {
  const api = new ApiClient({ baseUrl: options.baseUrl, timeoutMs: options.defaultTimeout, defaultHeaders: options.defaultHeaders });
  return handlerClass(name, options.version ?? '1.0.0', async (context) => fn({ ...injectArgs(context, options), api }));
}
