/**
 * In-process domain events (`fast` / `broadcast` delivery): a loop polling
 * `tasker_poll_in_process_event` off the event loop and calling the subscribers whose pattern
 * matches the event's name (`*` any, `payment.*` a prefix, else exact).
 */
import { TaskerError, TaskerStatus } from '../ffi/errors';
import type { TaskerLibrary } from '../ffi/library';
import { isObject, type JsonObject } from '../types/json';
import type { Logger } from './logger';

/** A domain event (upstream's DomainEvent JSON; `event_name` names it). */
export type DomainEvent = JsonObject & { event_name?: string };

/** Called for each matching event; errors are logged, never propagated. */
export type DomainEventListener = (event: DomainEvent) => void | Promise<void>;

function matches(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return name.startsWith(pattern.slice(0, -1));
  return pattern === name;
}

/** Subscriptions to in-process domain events. */
export class DomainEventSubscriber {
  private readonly listeners: Array<{ pattern: string; listener: DomainEventListener }> = [];
  private loop: Promise<void> | null = null;
  private stopping = false;
  private logger: Logger | null = null;
  /** Which start a loop belongs to (a loop left running by a timed-out stop ends on its own). */
  private generation = 0;

  constructor(private readonly pollTimeoutMs = 250) {}

  /** Calls `listener` for every event whose name matches `pattern`. Returns an unsubscribe function. */
  subscribe(pattern: string, listener: DomainEventListener): () => void {
    const entry = { pattern, listener };
    this.listeners.push(entry);
    return () => {
      const index = this.listeners.indexOf(entry);
      if (index >= 0) this.listeners.splice(index, 1);
    };
  }

  get hasListeners(): boolean {
    return this.listeners.length > 0;
  }

  /** Starts polling (the worker calls this after bootstrap when there are listeners). */
  start(lib: TaskerLibrary, logger: Logger): void {
    if (this.loop !== null) return;
    this.stopping = false;
    this.logger = logger;
    this.loop = this.run(lib, logger, ++this.generation);
  }

  /**
   * Stops polling once the current poll returns, waiting at most `graceMs` for it (and for a
   * listener running now): a listener that never settles does not hold the caller.
   */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    this.generation++;
    const loop = this.loop;
    if (loop === null) return;
    let timer: NodeTimer | undefined;
    const finished = await Promise.race([
      loop.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (!finished) this.logger?.warn(`domain event listeners still running after ${graceMs} ms; not waiting for them`);
    if (this.loop === loop) this.loop = null;
  }

  private async run(lib: TaskerLibrary, logger: Logger, generation: number): Promise<void> {
    while (!this.stopping && generation === this.generation) {
      let text: string | null;
      try {
        text = await lib.pollInProcessEventText(this.pollTimeoutMs);
      } catch (error) {
        if (TaskerError.hasStatus(error, TaskerStatus.NOT_RUNNING)) return;
        logger.error(`domain event poll failed: ${error instanceof Error ? error.message : String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      if (text !== null) await this.dispatch(text, logger);
    }
  }

  private async dispatch(text: string, logger: Logger): Promise<void> {
    let event: unknown;
    try {
      event = JSON.parse(text) as unknown;
    } catch (error) {
      logger.error(`domain event is not JSON: ${String(error)}`);
      return;
    }
    if (!isObject(event)) {
      logger.error('domain event is not a JSON object');
      return;
    }
    const name = typeof event.event_name === 'string' ? event.event_name : '';
    for (const { pattern, listener } of [...this.listeners]) {
      if (!matches(pattern, name)) continue;
      try {
        await listener(event as DomainEvent);
      } catch (error) {
        logger.error(`domain event listener for '${pattern}' failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }
}
