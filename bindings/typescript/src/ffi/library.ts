/**
 * Typed access to the worker library: JSON in and out, library failures as {@link TaskerError}.
 * Calls that may block return promises (they run on libuv's thread pool, never on the event loop).
 */
import { isObject, type JsonObject } from '../types/json';
import { TaskerError } from './errors';
import { loadNative, type NativeAddon } from './native';

/** Log levels of `tasker_log`. */
export enum LogLevel {
  TRACE = 0,
  DEBUG = 1,
  INFO = 2,
  WARN = 3,
  ERROR = 4,
}

/** Bootstrap configuration (`tasker_worker_bootstrap`); unset keys come from the environment. */
export interface BootstrapConfig {
  environment?: string;
  config_path?: string;
  database_url?: string;
  template_path?: string;
  web_bind_address?: string;
  grpc_bind_address?: string;
  log_level?: 'trace' | 'debug' | 'info' | 'warning' | 'error';
  log_format?: 'text' | 'json';
}

/** What `tasker_worker_bootstrap` answers. */
export interface BootstrapResult extends JsonObject {
  handle_id?: string;
  status?: string;
  worker_id?: string;
  namespaces?: string[];
  web_address?: string | null;
  grpc_address?: string | null;
}

/** Runs `call`, turning an addon error carrying a library status into a TaskerError. */
async function wrapped<T>(call: () => Promise<T> | T): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw TaskerError.from(error) ?? error;
  }
}

function wrappedSync<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw TaskerError.from(error) ?? error;
  }
}

/** Parses a JSON document the library returned (a library bug if it is not JSON). */
function parse(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`${what}: the library returned malformed JSON (${String(error)})`);
  }
}

function parseObject(text: string, what: string): JsonObject {
  const value = parse(text, what);
  if (!isObject(value)) throw new Error(`${what}: the library returned JSON that is not an object`);
  return value;
}

/** The worker library of this process (one embedded worker per process). */
export class TaskerLibrary {
  readonly native: NativeAddon;
  /** The library's version (`tasker_version`). */
  readonly version: string;

  /** Loads the addon and the library (see {@link loadNative}). */
  constructor(libraryPath?: string) {
    const { addon, version } = loadNative(libraryPath);
    this.native = addon;
    this.version = version;
  }

  /** Which library functions exist (the orchestration client needs a newer library). */
  symbols(): Record<string, boolean> {
    return this.native.symbols();
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  /** Starts the embedded worker; resolves once it serves its queues. */
  bootstrap(config: BootstrapConfig = {}): Promise<BootstrapResult> {
    return wrapped(async () => parseObject(await this.native.bootstrap(JSON.stringify(config)), 'bootstrap'));
  }

  /** Graceful stop, waited for (off the event loop). */
  stop(): Promise<JsonObject> {
    return wrapped(async () => parseObject(await this.native.stop(), 'stop'));
  }

  /** Begins the graceful shutdown; returns at once. */
  beginShutdown(): JsonObject {
    return wrappedSync(() => parseObject(this.native.beginShutdown(), 'beginShutdown'));
  }

  workerStatus(): JsonObject {
    return wrappedSync(() => parseObject(this.native.workerStatus(), 'workerStatus'));
  }

  isRunning(): boolean {
    return wrappedSync(() => this.native.isRunning());
  }

  // ---- the FFI dispatch channel ---------------------------------------------------------------

  /** The next step event's JSON text (parsed by the caller: it is untrusted), or null. */
  pollStepEventText(timeoutMs: number): Promise<string | null> {
    return wrapped(() => this.native.pollStepEvent(timeoutMs));
  }

  /** Completes an event with an already serialized StepExecutionResult. */
  completeStepEventText(eventId: string, resultJson: string): Promise<void> {
    return wrapped(() => this.native.completeStepEvent(eventId, resultJson));
  }

  /** Yields a checkpoint ({step_uuid, cursor, items_processed, accumulated_results}). */
  checkpointYieldStepEventText(eventId: string, checkpointJson: string): Promise<void> {
    return wrapped(() => this.native.checkpointYieldStepEvent(eventId, checkpointJson));
  }

  ffiDispatchMetrics(): JsonObject {
    return wrappedSync(() => parseObject(this.native.ffiDispatchMetrics(), 'ffiDispatchMetrics'));
  }

  checkStarvationWarnings(): number {
    return wrappedSync(() => this.native.checkStarvationWarnings());
  }

  cleanupTimeouts(): number {
    return wrappedSync(() => this.native.cleanupTimeouts());
  }

  // ---- domain events and observability --------------------------------------------------------

  /** The next in-process domain event's JSON text, or null. */
  pollInProcessEventText(timeoutMs: number): Promise<string | null> {
    return wrapped(() => this.native.pollInProcessEvent(timeoutMs));
  }

  health(): Promise<JsonObject> {
    return wrapped(async () => parseObject(await this.native.health(), 'health'));
  }

  metrics(): Promise<JsonObject> {
    return wrapped(async () => parseObject(await this.native.metrics(), 'metrics'));
  }

  workerConfig(): Promise<JsonObject> {
    return wrapped(async () => parseObject(await this.native.workerConfig(), 'workerConfig'));
  }

  /** Writes into the worker's log stream; never throws (a log line must not fail a step). */
  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    try {
      const strings: Record<string, string> = {};
      for (const [key, value] of Object.entries(fields ?? {})) {
        strings[key] = typeof value === 'string' ? value : String(value);
      }
      this.native.log(level, message, Object.keys(strings).length > 0 ? JSON.stringify(strings) : null);
    } catch {
      // Logging is best effort.
    }
  }

  // ---- raw client calls (see TaskerClient) ----------------------------------------------------

  /** Runs one `tasker_client_*` call and parses its JSON answer. */
  clientCall(name: string, call: (native: NativeAddon) => Promise<string>): Promise<unknown> {
    return wrapped(async () => parse(await call(this.native), name));
  }
}

let shared: TaskerLibrary | null = null;

/** The process's TaskerLibrary (created on first use). */
export function library(libraryPath?: string): TaskerLibrary {
  if (shared === null) shared = new TaskerLibrary(libraryPath);
  return shared;
}
