// Unit tests of the worker against a stand-in library (no database, no running worker): handler
// timeouts, whatever a handler throws, malformed events, the concurrency bound, SIGTERM twice,
// domain-event listeners at stop, serialization limits, the addon's argument checks and libraries
// that are missing or incomplete. The real library runs in the other (integration) test files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import tasker from '../dist/index.js';
import { STEP, event } from './support/events.mjs';

// ---- the worker against a stand-in library (no database) ---------------------------------------------------
const { Worker, DomainEventSubscriber, thrownErrorResult, EventPoller, serialize, library } = tasker;

/** Waits until `probe()` is truthy (the deadline only stops a hang). */
async function until(probe, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`not met within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const notRunning = () => Object.assign(new Error('no worker is running'), { status: 2, code: 'TASKER_ERR_NOT_RUNNING' });

/** The library's dispatch channel in JavaScript: queued event texts, recorded completions. */
class FakeLibrary {
  constructor(events = []) {
    this.queue = [...events];
    this.completions = [];
    this.logs = [];
    this.stopCalls = 0;
    this.running = false;
    this.wake = null;
  }
  symbols() { return {}; }
  async bootstrap() { this.running = true; return { worker_id: 'fake-worker', status: 'started' }; }
  beginShutdown() { if (!this.running) throw notRunning(); return { status: 'shutting_down' }; }
  async stop() { this.stopCalls++; this.running = false; this.wake?.(); return { status: 'stopped' }; }
  push(text) { this.queue.push(text); this.wake?.(); }
  async pollStepEventText(timeoutMs) {
    if (!this.running) throw notRunning();
    if (this.queue.length === 0) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.wake = () => { clearTimeout(timer); this.wake = null; resolve(); };
      });
    }
    if (!this.running) throw notRunning();
    return this.queue.shift() ?? null;
  }
  async completeStepEventText(eventId, json) { this.completions.push({ eventId, result: JSON.parse(json) }); }
  async checkpointYieldStepEventText() {}
  checkStarvationWarnings() { return 0; }
  log(level, message) { this.logs.push(message); }
  async pollInProcessEventText(timeoutMs) { await new Promise((resolve) => setTimeout(resolve, timeoutMs)); if (!this.running) throw notRunning(); return null; }
  completionsOf(eventId) { return this.completions.filter((c) => c.eventId === eventId); }
}

/** A valid step event text for `callable` with event id `id`. */
function eventText(id, callable, context = {}) {
  const value = event({ handler: { callable }, context });
  value.event_id = id;
  return JSON.stringify(value);
}

test('a handler that never settles gets handler_timeout, frees its slot, and stop does not hang', async () => {
  const fake = new FakeLibrary([eventText('never', 'ts.never'), eventText('after', 'ts.ok')]);
  const worker = new Worker({ library: fake, concurrency: 1, pollTimeoutMs: 20, handlerTimeoutMs: 150 });
  worker.registry.register('ts.never', { name: 'never', version: '1', call: () => new Promise(() => {}) });
  worker.registry.register('ts.ok', { name: 'ok', version: '1', call: () => ({ ok: true }) });
  await worker.start();
  // With one slot, the second event only runs once the never-settling handler gave its slot back.
  await until(() => fake.completionsOf('after').length === 1, 'the event after the hung handler completed');
  const [timedOut] = fake.completionsOf('never');
  assert.equal(timedOut.result.success, false);
  assert.equal(timedOut.result.error.error_type, 'handler_timeout');
  assert.equal(timedOut.result.metadata.retryable, true);
  assert.match(timedOut.result.error.message, /ts\.never.*150 ms/);
  await worker.stop();
  assert.equal(fake.completions.length, 2);
  assert.equal(worker.running, 0);
  assert.throws(() => new Worker({ library: fake, handlerTimeoutMs: 2 ** 31 }), RangeError);
  assert.throws(() => new Worker({ library: fake, pollTimeoutMs: -1 }), RangeError);
  assert.throws(() => new EventPoller(fake, null, async () => {}, { pollTimeoutMs: 1.5 }), RangeError);
});

test('whatever a handler throws, its event is completed exactly once with a failure', async () => {
  const hostile = new Proxy({}, {
    get() { throw new Error('get trap'); }, getPrototypeOf() { throw new Error('prototype trap'); },
    ownKeys() { throw new Error('keys trap'); }, getOwnPropertyDescriptor() { throw new Error('descriptor trap'); },
  });
  const sneaky = new Error('hidden');
  Object.defineProperty(sneaky, 'stack', { get() { throw new Error('stack getter'); } });
  Object.defineProperty(sneaky, 'message', { get() { throw new Error('message getter'); } });
  const thrown = { number: 42, null: null, undefined, symbol: Symbol('s'), proxy: hostile, sneaky, string: 'plain' };
  const fake = new FakeLibrary();
  const worker = new Worker({ library: fake, concurrency: 3, pollTimeoutMs: 20 });
  worker.registry.register('ts.throw', { name: 'throw', version: '1', call: (context) => { throw thrown[context.getInput('kind')]; } });
  await worker.start();
  for (const kind of Object.keys(thrown)) fake.push(eventText(kind, 'ts.throw', { kind }));
  await until(() => Object.keys(thrown).every((kind) => fake.completionsOf(kind).length === 1), 'every event completed');
  await worker.stop();
  assert.equal(fake.completions.length, Object.keys(thrown).length, JSON.stringify(fake.completions));
  const byKind = Object.fromEntries(fake.completions.map((c) => [c.eventId, c.result]));
  for (const result of Object.values(byKind)) {
    assert.equal(result.success, false);
    assert.equal(result.metadata.retryable, true);
  }
  assert.match(byKind.number.error.message, /non-Error value: 42$/);
  assert.equal(byKind.null.metadata.custom.exception_type, 'null');
  assert.match(byKind.null.error.message, /non-Error value: null$/);
  assert.match(byKind.symbol.error.message, /Symbol\(s\)/);
  assert.equal(byKind.sneaky.error.error_type, 'Error');
  assert.equal(byKind.string.error.message, 'handler threw a non-Error value: plain');
  // Directly, too: never throws.
  assert.equal(thrownErrorResult(hostile).success, false);
  assert.match(thrownErrorResult('x'.repeat(100_000)).errorMessage, /^handler threw a non-Error value: x{4096}…$/);
});

test('malformed events never stop the poller; an event with ids gets event_error once', async () => {
  const missingTask = JSON.parse(eventText('bad-ids', 'ts.ok'));
  delete missingTask.task_uuid;
  const fake = new FakeLibrary(['{not json', '[]', JSON.stringify({ step_uuid: STEP }), JSON.stringify(missingTask), eventText('good', 'ts.ok')]);
  const worker = new Worker({ library: fake, pollTimeoutMs: 20 });
  worker.registry.register('ts.ok', { name: 'ok', version: '1', call: () => ({ ok: true }) });
  await worker.start();
  await until(() => fake.completionsOf('good').length === 1 && fake.completionsOf('bad-ids').length === 1, 'both usable events completed');
  await worker.stop();
  assert.equal(fake.completions.length, 2);
  assert.equal(fake.completionsOf('bad-ids')[0].result.error.error_type, 'event_error');
  assert.equal(fake.completionsOf('bad-ids')[0].result.metadata.retryable, false);
  assert.deepEqual(fake.completionsOf('good')[0].result.result, { ok: true });
  assert.equal(fake.logs.filter((line) => /unusable step event dropped/.test(line)).length, 3);
});

test('the concurrency bound holds: never more handlers at once than slots', async () => {
  const fake = new FakeLibrary(Array.from({ length: 6 }, (_, i) => eventText(`e${i}`, 'ts.gate')));
  const gates = [];
  let active = 0;
  let most = 0;
  const worker = new Worker({ library: fake, concurrency: 2, pollTimeoutMs: 20 });
  worker.registry.register('ts.gate', { name: 'gate', version: '1', call: async () => {
    active++;
    most = Math.max(most, active);
    await new Promise((resolve) => gates.push(resolve));
    active--;
    return {};
  } });
  await worker.start();
  for (let released = 0; released < 6; released++) {
    // Two handlers hold both slots (until the last event): release one, the next may start.
    await until(() => active === Math.min(2, 6 - released) && gates.length > 0, `handlers running after ${released} released`);
    assert.ok(most <= 2, `${most} handlers ran at once`);
    gates.shift()();
  }
  await until(() => fake.completions.length === 6, 'all six completed');
  await worker.stop();
  assert.equal(most, 2);
});

test('SIGTERM twice stops once; a worker started again can be stopped again', async () => {
  const fake = new FakeLibrary();
  const worker = new Worker({ library: fake, pollTimeoutMs: 20 });
  const before = process.listenerCount('SIGTERM');
  let started = false;
  const running = worker.run({ onStart: () => { started = true; } });
  await until(() => started, 'the worker started');
  assert.equal(process.listenerCount('SIGTERM'), before + 1);
  process.emit('SIGTERM');
  process.emit('SIGTERM');
  await running;
  assert.equal(fake.stopCalls, 1);
  assert.equal(process.listenerCount('SIGTERM'), before);
  await worker.start();
  assert.equal(fake.running, true);
  await worker.stop();
  assert.equal(fake.stopCalls, 2);
  assert.equal(fake.running, false);
});

test('a domain event listener that never settles does not hold the stop', async () => {
  let delivered = false;
  const fake = new FakeLibrary();
  fake.running = true;
  fake.pollInProcessEventText = async () => {
    if (delivered) { await new Promise((resolve) => setTimeout(resolve, 10)); return null; }
    delivered = true;
    return JSON.stringify({ event_name: 'x.y' });
  };
  const subscriber = new DomainEventSubscriber(10);
  let called = false;
  subscriber.subscribe('x.*', () => { called = true; return new Promise(() => {}); });
  subscriber.start(fake, { warn: (message) => fake.logs.push(message), error: () => {} });
  await until(() => called, 'the listener was called');
  await subscriber.stop(50);
  assert.match(fake.logs.join('\n'), /still running after 50 ms/);
});

test('serialize tells a too large document from a too deep one', () => {
  const huge = { toJSON() { throw new RangeError('Invalid string length'); } };
  assert.match(serialize(huge).error, /too large/);
  assert.doesNotMatch(serialize(huge).error, /nested/);
  assert.match(serialize({ toJSON() { throw Object.create(null); } }).error, /cannot be shown/);
});

// ---- the addon: hostile arguments and libraries ---------------------------------------------------------------
test('every addon function refuses a wrong argument type with a TypeError naming the argument', async () => {
  const native = library().native;
  const names = Object.keys(native.symbols());
  const withArguments = names.filter((name) => native[name].length === 0 && !['stop', 'beginShutdown', 'workerStatus', 'isRunning',
    'ffiDispatchMetrics', 'checkStarvationWarnings', 'cleanupTimeouts', 'health', 'metrics', 'workerConfig', 'clientHealthCheck'].includes(name));
  assert.ok(withArguments.length >= 10, withArguments.join(','));
  for (const name of withArguments) {
    assert.throws(() => native[name](Symbol('bad'), Symbol('bad'), Symbol('bad'), Symbol('bad')),
      (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE' && new RegExp(`^${name}: argument \\w+ must be`).test(e.message), name);
  }
  // Huge and non-UTF-8 (lone surrogate) strings reach the library intact enough to be refused cleanly.
  await assert.rejects(native.completeStepEvent('e'.repeat(20_000_000), '\ud800{}'), (e) => e.status === 2 || e.status === 1);
});

test('a library that does not exist, or lacks the worker functions, is refused clearly', async (t) => {
  const { execFileSync, spawnSync } = await import('node:child_process');
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join, dirname } = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
  const dir = mkdtempSync(join(tmpdir(), 'tasker-ts-stub-'));
  // A library with only the memory and error functions and tasker_worker_is_running.
  writeFileSync(join(dir, 'stub.c'), [
    '#include <stdint.h>', '#include <stdlib.h>',
    'char *tasker_last_error(void) { return NULL; }', 'void tasker_string_free(char *s) { free(s); }',
    'const char *tasker_version(void) { return "0.0.1-stub"; }',
    'int32_t tasker_worker_is_running(int32_t *r) { *r = 0; return 0; }',
  ].join('\n'));
  try {
    execFileSync(process.env.CC || 'gcc', ['-shared', '-fPIC', '-o', join(dir, 'libstub.so'), join(dir, 'stub.c')]);
  } catch (error) {
    t.skip(`no C compiler: ${error.message}`);
    return;
  }
  const script = `
    const tasker = require(${JSON.stringify(join(packageDir, 'dist', 'index.js'))});
    const native = require(${JSON.stringify(join(packageDir, 'build', 'tasker_addon.node'))});
    const out = {};
    const code = (f) => { try { f(); return 'ok'; } catch (e) { return e.code + ' ' + e.message; } };
    out.before = code(() => native.isRunning());
    out.missing = code(() => native.load(${JSON.stringify(join(dir, 'missing.so'))}));
    out.notTasker = code(() => native.load(${JSON.stringify(join(dir, 'stub.c'))}));
    out.version = native.load(${JSON.stringify(join(dir, 'libstub.so'))});
    out.running = native.isRunning();
    out.poll = code(() => native.pollStepEvent(0));
    out.symbols = native.symbols();
    new tasker.Worker({ libraryPath: ${JSON.stringify(join(dir, 'libstub.so'))} }).start().then(
      () => { out.start = 'started'; }, (e) => { out.start = e.message; }).then(() => console.log(JSON.stringify(out)));`;
  const done = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, TASKER_WORKER_LIBRARY: '' } });
  assert.equal(done.status, 0, done.stderr);
  const out = JSON.parse(done.stdout);
  assert.match(out.before, /^ERR_TASKER_NOT_LOADED /);
  assert.match(out.missing, /^ERR_TASKER_LOAD load: cannot load .*missing\.so/);
  assert.match(out.notTasker, /^ERR_TASKER_LOAD /);
  assert.equal(out.version, '0.0.1-stub');
  assert.equal(out.running, false);
  assert.match(out.poll, /^ERR_TASKER_SYMBOL_MISSING pollStepEvent: tasker_poll_step_event is not exported/);
  assert.equal(out.symbols.isRunning, true);
  assert.equal(out.symbols.bootstrap, false);
  assert.match(out.start, /does not export what the worker needs \(bootstrap, stop, beginShutdown, pollStepEvent/);
});
