/** Errors of the native layer. */

/** The `tasker_status` values of `tasker_worker.h`. */
export enum TaskerStatus {
  OK = 0,
  INVALID_ARGUMENT = 1,
  NOT_RUNNING = 2,
  ALREADY_RUNNING = 3,
  UNKNOWN_EVENT = 4,
  BOOTSTRAP = 5,
  REFUSED = 6,
  CLIENT = 7,
  INTERNAL = 99,
}

/**
 * A library call that returned anything but TASKER_OK: `status` is the `tasker_status`, `code` its
 * name (e.g. `TASKER_ERR_NOT_RUNNING`), the message the library's `tasker_last_error()`.
 */
export class TaskerError extends Error {
  readonly status: TaskerStatus | number;
  readonly code: string;

  constructor(message: string, status: number, code: string) {
    super(message);
    this.name = 'TaskerError';
    this.status = status;
    this.code = code;
  }

  /** The error as a TaskerError when the addon reported a library status, else null. */
  static from(error: unknown): TaskerError | null {
    if (error instanceof TaskerError) return error;
    if (error instanceof Error) {
      const fields = error as Error & { status?: unknown; code?: unknown };
      if (typeof fields.status === 'number' && typeof fields.code === 'string') {
        const wrapped = new TaskerError(error.message, fields.status, fields.code);
        wrapped.stack = error.stack;
        return wrapped;
      }
    }
    return null;
  }

  /** True when `error` is a TaskerError (or addon error) with `status`. */
  static hasStatus(error: unknown, status: TaskerStatus): boolean {
    return TaskerError.from(error)?.status === status;
  }
}
