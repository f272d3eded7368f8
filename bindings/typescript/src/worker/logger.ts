/** The SDK's log lines: into the worker's log stream (`tasker_log`), same format as its own. */
import { LogLevel, type TaskerLibrary } from '../ffi/library';

/** Logs through the library; never throws. */
export class Logger {
  constructor(private readonly lib: TaskerLibrary, private readonly component = 'tasker.typescript') {}

  debug(message: string, fields?: Record<string, unknown>): void {
    this.lib.log(LogLevel.DEBUG, message, { component: this.component, ...fields });
  }

  info(message: string, fields?: Record<string, unknown>): void {
    this.lib.log(LogLevel.INFO, message, { component: this.component, ...fields });
  }

  warn(message: string, fields?: Record<string, unknown>): void {
    this.lib.log(LogLevel.WARN, message, { component: this.component, ...fields });
  }

  error(message: string, fields?: Record<string, unknown>): void {
    this.lib.log(LogLevel.ERROR, message, { component: this.component, ...fields });
  }
}
