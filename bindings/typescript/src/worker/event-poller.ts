/**
 * The poll loop: waits for step events off the event loop (`tasker_poll_step_event` with a timeout
 * runs on libuv's thread pool) and runs at most `concurrency` of them at once. A failed poll never
 * ends the loop, except NOT_RUNNING (the worker stopped).
 */
import { TaskerError, TaskerStatus } from '../ffi/errors';
import type { TaskerLibrary } from '../ffi/library';
import type { Logger } from './logger';
import { Semaphore } from './semaphore';

/** Poller settings. */
export interface EventPollerOptions {
  /** Handlers running at once (default 10, as upstream). */
  concurrency?: number;
  /** How long one poll waits for an event (default 500 ms). */
  pollTimeoutMs?: number;
  /** Starvation check every this many polls (default 100, as upstream). */
  starvationCheckEvery?: number;
}

/** Polls and dispatches step events to `process`. */
export class EventPoller {
  private readonly slots: Semaphore;
  private readonly pollTimeoutMs: number;
  private readonly starvationCheckEvery: number;
  private readonly inFlight = new Set<Promise<void>>();
  private stopping = false;
  private loop: Promise<void> | null = null;
  private polls = 0;

  constructor(
    private readonly lib: TaskerLibrary,
    private readonly logger: Logger,
    private readonly process: (eventText: string) => Promise<void>,
    options: EventPollerOptions = {}
  ) {
    this.slots = new Semaphore(options.concurrency ?? 10);
    this.pollTimeoutMs = options.pollTimeoutMs ?? 500;
    this.starvationCheckEvery = options.starvationCheckEvery ?? 100;
    // Checked here: a bad value would otherwise fail every poll (an error line every 100 ms, forever).
    if (!Number.isInteger(this.pollTimeoutMs) || this.pollTimeoutMs < 0 || this.pollTimeoutMs > 2 ** 31 - 1) {
      throw new RangeError(`pollTimeoutMs must be an integer from 0 to ${2 ** 31 - 1}, got ${String(options.pollTimeoutMs)}`);
    }
    if (!Number.isInteger(this.starvationCheckEvery) || this.starvationCheckEvery < 1) {
      throw new RangeError(`starvationCheckEvery must be an integer >= 1, got ${String(options.starvationCheckEvery)}`);
    }
  }

  /** Handlers running now. */
  get running(): number {
    return this.inFlight.size;
  }

  start(): void {
    if (this.loop !== null) return;
    this.stopping = false;
    this.loop = this.run();
  }

  /** Stops polling (after the current poll returns) and waits for the running handlers. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.loop !== null) await this.loop;
    this.loop = null;
    await Promise.all([...this.inFlight]);
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      await this.slots.acquire();
      if (this.stopping) {
        this.slots.release();
        break;
      }
      let text: string | null;
      try {
        text = await this.lib.pollStepEventText(this.pollTimeoutMs);
      } catch (error) {
        this.slots.release();
        if (TaskerError.hasStatus(error, TaskerStatus.NOT_RUNNING)) break;
        this.logger.error(`poll failed: ${error instanceof Error ? error.message : String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      this.maintain();
      if (text === null) {
        this.slots.release();
        continue;
      }
      const task: Promise<void> = this.process(text)
        .catch((error: unknown) => this.logger.error(`step event failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`))
        .finally(() => {
          this.inFlight.delete(task);
          this.slots.release();
        });
      this.inFlight.add(task);
    }
  }

  /** Starvation warnings every `starvationCheckEvery` polls (upstream's cadence). */
  private maintain(): void {
    this.polls++;
    if (this.polls % this.starvationCheckEvery !== 0) return;
    try {
      this.lib.checkStarvationWarnings();
    } catch {
      // Only a diagnostic.
    }
  }
}
