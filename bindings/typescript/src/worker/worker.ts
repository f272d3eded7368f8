/**
 * The embedded Swift worker plus the TypeScript handlers of this process.
 *
 * ```ts
 * const worker = new Worker({ handlers: [ChargeHandler] });
 * await worker.run();   // until SIGTERM/SIGINT: drains, stops, resolves
 * ```
 *
 * Steps whose callable has a Swift handler (the built-ins `tasker.echo`, `tasker.noop`, ...) run
 * inside the library; every other step comes to this process's poll loop.
 */
import { library, type BootstrapConfig, type BootstrapResult, type TaskerLibrary } from '../ffi/library';
import type { StepHandlerClass } from '../handler/base';
import { HandlerRegistry } from '../registry/handler-registry';
import { ErrorType } from '../types/error-type';
import { handlerOf, parseStepEvent, StepEventError, type StepEvent } from '../types/step-event';
import { StepHandlerResult } from '../types/step-handler-result';
import { Completion } from './completion';
import { DomainEventSubscriber } from './domain-events';
import { EventPoller, type EventPollerOptions } from './event-poller';
import { Logger } from './logger';
import { StepExecutor } from './step-executor';

/** Worker settings. */
export interface WorkerOptions extends EventPollerOptions {
  /** Bootstrap configuration; unset keys come from the environment (DATABASE_URL, ...). */
  config?: BootstrapConfig;
  /** The registry to resolve handlers with (default: a new one). */
  registry?: HandlerRegistry;
  /** Handler classes to register under their handlerName. */
  handlers?: StepHandlerClass[];
  /** libTaskerWorkerFFI.so (default `$TASKER_WORKER_LIBRARY`). */
  libraryPath?: string;
  /** Domain event subscriptions (polled while the worker runs when it has listeners). */
  domainEvents?: DomainEventSubscriber;
  /**
   * A handler that has not settled after this long gets a retryable `handler_timeout` failure and
   * frees its concurrency slot (default 300000 ms, upstream's `handlerTimeoutMs`). The handler's
   * promise cannot be cancelled: whatever it settles with later is ignored. Without this bound a
   * handler that never settles would hold its slot (and the graceful stop) forever.
   */
  handlerTimeoutMs?: number;
  /** The library to drive (default: `library(libraryPath)`); a stand-in for tests. */
  library?: TaskerLibrary;
}

/** The longest delay setTimeout honours (a longer one fires after 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The addon functions the worker needs (an older or foreign library may lack some). */
const REQUIRED_FUNCTIONS = ['bootstrap', 'stop', 'beginShutdown', 'pollStepEvent', 'completeStepEvent', 'checkpointYieldStepEvent'];

/** Options of {@link Worker.run}. */
export interface RunOptions {
  /** SIGTERM and SIGINT request the graceful stop (default true). */
  installSignalHandlers?: boolean;
  /** Called with the bootstrap result once the worker serves. */
  onStart?: (result: BootstrapResult) => void;
}

/** The embedded worker and its TypeScript handlers. */
export class Worker {
  readonly registry: HandlerRegistry;
  readonly domainEvents: DomainEventSubscriber;
  readonly lib: TaskerLibrary;
  readonly logger: Logger;
  private readonly options: WorkerOptions;
  private readonly poller: EventPoller;
  private readonly executor: StepExecutor;
  private readonly completion: Completion;
  private bootstrapResult: BootstrapResult | null = null;
  private stopRequested: (() => void) | null = null;
  private stopping: Promise<void> | null = null;
  private readonly handlerTimeoutMs: number;

  constructor(options: WorkerOptions = {}) {
    this.options = options;
    this.handlerTimeoutMs = options.handlerTimeoutMs ?? 300_000;
    if (!Number.isInteger(this.handlerTimeoutMs) || this.handlerTimeoutMs < 1 || this.handlerTimeoutMs > MAX_TIMER_MS) {
      throw new RangeError(`handlerTimeoutMs must be an integer from 1 to ${MAX_TIMER_MS}, got ${String(options.handlerTimeoutMs)}`);
    }
    this.lib = options.library ?? library(options.libraryPath);
    this.logger = new Logger(this.lib);
    this.registry = options.registry ?? new HandlerRegistry();
    for (const handler of options.handlers ?? []) this.registry.register(handler);
    this.domainEvents = options.domainEvents ?? new DomainEventSubscriber();
    this.executor = new StepExecutor(this.registry);
    this.completion = new Completion(this.lib, this.logger, () => this.workerId);
    this.poller = new EventPoller(this.lib, this.logger, (text) => this.process(text), options);
  }

  /** The worker's id once started. */
  get workerId(): string | null {
    const id = this.bootstrapResult?.worker_id;
    return typeof id === 'string' ? id : null;
  }

  /** Handlers running now. */
  get running(): number {
    return this.poller.running;
  }

  /** Bootstraps the embedded worker (resolves once it serves) and starts polling. */
  async start(): Promise<BootstrapResult> {
    const symbols = typeof this.lib.symbols === 'function' ? this.lib.symbols() : {};
    const missing = REQUIRED_FUNCTIONS.filter((name) => symbols[name] === false);
    if (missing.length > 0) {
      throw new Error(`the Tasker worker library does not export what the worker needs (${missing.join(', ')}): a newer libTaskerWorkerFFI.so is needed`);
    }
    if (this.stopping !== null) await this.stopping;
    this.bootstrapResult = await this.lib.bootstrap(this.options.config ?? {});
    this.stopping = null; // a worker started again after a stop can be stopped again
    this.poller.start();
    if (this.domainEvents.hasListeners) this.domainEvents.start(this.lib, this.logger);
    this.logger.info('TypeScript handlers attached', { callables: this.registry.callables().join(','), worker_id: this.workerId ?? '' });
    return this.bootstrapResult;
  }

  /**
   * Graceful stop: intake stops (`tasker_worker_begin_shutdown`), the poll loop keeps serving the
   * steps already claimed while `tasker_worker_stop` drains them (every result stored), then the
   * loop ends once running handlers have completed. Idempotent.
   */
  stop(): Promise<void> {
    if (this.stopping === null) this.stopping = this.drain();
    return this.stopping;
  }

  private async drain(): Promise<void> {
    try {
      this.lib.beginShutdown();
    } catch (error) {
      this.logger.warn(`begin shutdown: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.logger.info('stopping: draining TypeScript handlers', { running: String(this.running) });
    try {
      await this.lib.stop();
    } finally {
      try {
        await this.poller.stop();
      } finally {
        // After the stop: domain events of the drained steps still reach the subscribers. Bounded
        // (a listener that never settles must not hold the stop).
        await this.domainEvents.stop();
      }
    }
  }

  /** Asks {@link run} to stop (what SIGTERM and SIGINT do). */
  requestStop(): void {
    this.stopRequested?.();
  }

  /** {@link start}, wait for SIGTERM/SIGINT (or {@link requestStop}), then {@link stop}. */
  async run(options: RunOptions = {}): Promise<void> {
    const stopSignal = new Promise<void>((resolve) => {
      this.stopRequested = resolve;
    });
    const onSignal = (): void => this.requestStop();
    const install = options.installSignalHandlers ?? true;
    if (install) {
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
    }
    try {
      const started = await this.start();
      options.onStart?.(started);
      await stopSignal;
      await this.stop();
    } finally {
      if (install) {
        process.removeListener('SIGTERM', onSignal);
        process.removeListener('SIGINT', onSignal);
      }
    }
  }

  /** Runs one polled event's handler and delivers its outcome. Never throws. */
  private async process(text: string): Promise<void> {
    const startedAt = performance.now();
    let event;
    try {
      event = parseStepEvent(text);
    } catch (error) {
      const bad = error instanceof StepEventError ? error : new StepEventError(String(error), null, null);
      if (bad.eventId !== null && bad.stepUuid !== null) {
        const failure = StepHandlerResult.failure(`malformed step event: ${bad.message}`, ErrorType.EVENT_ERROR, false);
        await this.completion.deliver(bad.eventId, bad.stepUuid, failure, startedAt);
      } else {
        this.logger.error(`unusable step event dropped (the channel times it out): ${bad.message}`);
      }
      return;
    }
    let outcome: StepHandlerResult;
    try {
      outcome = await this.bounded(event);
    } catch (error) {
      // Only an SDK bug gets here (execute turns every handler outcome into a result).
      outcome = StepHandlerResult.failure(`the TypeScript worker failed running the step: ${error instanceof Error ? error.message : typeof error}`,
        ErrorType.HANDLER_ERROR, true);
    }
    await this.completion.deliver(event.event_id, event.step_uuid, outcome, startedAt);
  }

  /** The handler's outcome, or a retryable handler_timeout failure after `handlerTimeoutMs`. */
  private async bounded(event: StepEvent): Promise<StepHandlerResult> {
    let timer: NodeTimer | undefined;
    const timedOut = new Promise<StepHandlerResult>((resolve) => {
      timer = setTimeout(() => {
        const callable = String(handlerOf(event).callable);
        this.logger.warn(`handler for callable '${callable}' did not finish within ${this.handlerTimeoutMs} ms; its outcome will be ignored`,
          { step_uuid: event.step_uuid });
        resolve(StepHandlerResult.failure(`handler for callable '${callable}' did not finish within ${this.handlerTimeoutMs} ms (handlerTimeoutMs)`,
          'handler_timeout', true));
      }, this.handlerTimeoutMs);
    });
    try {
      return await Promise.race([this.executor.execute(event), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
