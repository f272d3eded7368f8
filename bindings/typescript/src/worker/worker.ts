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
import { parseStepEvent, StepEventError } from '../types/step-event';
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
}

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

  constructor(options: WorkerOptions = {}) {
    this.options = options;
    this.lib = library(options.libraryPath);
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
    this.bootstrapResult = await this.lib.bootstrap(this.options.config ?? {});
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
    await this.domainEvents.stop();
    try {
      await this.lib.stop();
    } finally {
      await this.poller.stop();
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
    const outcome = await this.executor.execute(event);
    await this.completion.deliver(event.event_id, event.step_uuid, outcome, startedAt);
  }
}
