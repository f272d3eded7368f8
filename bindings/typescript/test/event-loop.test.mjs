// This test process is itself the worker host (Worker in-process, no signals): a poll that waits
// runs off the event loop (timers keep firing meanwhile); the worker runs a task and stops.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import tasker from '../dist/index.js';
import { register } from './fixtures/handlers.mjs';
import { submitTask, waitForTask, stepResult } from './support/harness.mjs';

const worker = new tasker.Worker({ concurrency: 2, pollTimeoutMs: 1000 });
register(worker.registry);

before(async () => {
  const started = await worker.start();
  assert.match(started.worker_id, /./);
});
after(async () => {
  await worker.stop();
});

test('timers keep firing while polls wait for step events', async () => {
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 20);
  let immediate = false;
  setImmediate(() => { immediate = true; });
  const began = performance.now();
  // No task has been submitted: this poll (and the worker's own) waits its whole timeout.
  const event = await worker.lib.pollStepEventText(1500);
  const waited = performance.now() - began;
  clearInterval(timer);
  assert.equal(event, null);
  assert.ok(waited >= 1400, `the poll returned after ${waited} ms, before its timeout`);
  assert.ok(immediate, 'setImmediate did not run during the poll');
  assert.ok(ticks >= 10, `only ${ticks} timer ticks during a ${Math.round(waited)} ms poll`);
});

test('the in-process Worker runs a task, then stops; calls afterwards say it is not running', async () => {
  const task = await submitTask('ts_chain', { number: 4 });
  assert.equal(await waitForTask(task), 'complete');
  assert.deepEqual((await stepResult(task, 'chain_verify')).result, { value: 23, verified: true });
  await worker.stop();
  assert.equal(worker.lib.isRunning(), false);
  assert.equal(worker.running, 0);
  await assert.rejects(worker.lib.pollStepEventText(0), (error) => error.code === 'TASKER_ERR_NOT_RUNNING' && error.status === 2);
  await worker.stop(); // idempotent
});
