/** A counting semaphore bounding how many handlers run at once. */
export class Semaphore {
  private available: number;
  private readonly waiters: Array<() => void> = [];

  constructor(permits: number) {
    if (!Number.isInteger(permits) || permits < 1) throw new RangeError(`permits must be an integer >= 1, got ${permits}`);
    this.available = permits;
  }

  /** Resolves once a permit is free (and takes it). */
  acquire(): Promise<void> {
    if (this.available > 0) {
      this.available--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Returns a permit (to the longest waiter, if any). */
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.available++;
  }
}
