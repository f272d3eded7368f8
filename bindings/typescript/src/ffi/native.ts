/**
 * The Node-API addon (`build/tasker_addon.node`, native/tasker_addon.c) and the Tasker worker
 * library it loads.
 *
 * The library is found, in order: the `libraryPath` given to {@link loadNative}, then
 * `$TASKER_WORKER_LIBRARY`. The addon itself: `$TASKER_ADDON_PATH`, else `build/tasker_addon.node`
 * next to this package's `dist/`.
 */

/** The addon's functions (camelCase names of `tasker_worker.h`'s; JSON travels as strings). */
export interface NativeAddon {
  load(path: string): string;
  symbols(): Record<string, boolean>;
  loadedPath(): string | null;

  bootstrap(configJson: string | null): Promise<string>;
  stop(): Promise<string>;
  beginShutdown(): string;
  workerStatus(): string;
  isRunning(): boolean;

  pollStepEvent(timeoutMs: number): Promise<string | null>;
  completeStepEvent(eventId: string, resultJson: string): Promise<void>;
  checkpointYieldStepEvent(eventId: string, checkpointJson: string): Promise<void>;
  ffiDispatchMetrics(): string;
  checkStarvationWarnings(): number;
  cleanupTimeouts(): number;

  pollInProcessEvent(timeoutMs: number): Promise<string | null>;

  health(): Promise<string>;
  metrics(): Promise<string>;
  workerConfig(): Promise<string>;
  log(level: number, message: string, fieldsJson: string | null): void;

  clientHealthCheck(): Promise<string>;
  clientCreateTask(requestJson: string): Promise<string>;
  clientGetTask(taskUuid: string): Promise<string>;
  clientListTasks(limit: number, offset: number, namespace: string | null, status: string | null): Promise<string>;
  clientCancelTask(taskUuid: string): Promise<string>;
  clientListTaskSteps(taskUuid: string): Promise<string>;
  clientGetStep(taskUuid: string, stepUuid: string): Promise<string>;
  clientGetStepAuditHistory(taskUuid: string, stepUuid: string): Promise<string>;
}

let addon: NativeAddon | null = null;

/** The addon's path: `$TASKER_ADDON_PATH` or `<package>/build/tasker_addon.node`. */
export function addonPath(): string {
  return process.env.TASKER_ADDON_PATH || `${__dirname}/../../build/tasker_addon.node`;
}

/**
 * The addon with the worker library loaded (once per process), and the library's version.
 *
 * @param libraryPath - libTaskerWorkerFFI.so; default the one already loaded, else `$TASKER_WORKER_LIBRARY`.
 * @throws Error when neither names a library, or it cannot be loaded (the message says why).
 */
export function loadNative(libraryPath?: string): { addon: NativeAddon; version: string } {
  if (addon === null) {
    addon = require(addonPath()) as NativeAddon;
  }
  const loaded = addon.loadedPath();
  const wanted = libraryPath ?? loaded ?? process.env.TASKER_WORKER_LIBRARY;
  if (!wanted) {
    throw new Error(
      'the Tasker worker library is not configured: set TASKER_WORKER_LIBRARY to libTaskerWorkerFFI.so ' +
        'or pass libraryPath'
    );
  }
  const version = addon.load(wanted);
  return { addon, version };
}
