// SIGTERM of a host while TypeScript handlers run: intake stops, the running handlers finish and
// their results are stored, the worker stops, the process exits 0; no step stays claimed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHost, submitTask, steps } from './support/harness.mjs';

let host;
after(async () => {
  if (host) await host.close();
});

test('SIGTERM drains running TypeScript steps and exits 0, leaving none claimed without a result', async () => {
  // The handlers finish only once the worker began shutting down: they run during the drain.
  host = await startHost('drain-host', { TASKER_TS_DRAIN_AFTER_SHUTDOWN: '1' });
  const task = await submitTask('ts_drain', {});
  // Both slow handlers have started (each prints a line as it begins).
  await host.waitForLine('STARTED drain_a');
  await host.waitForLine('STARTED drain_b');
  assert.equal(await host.terminate(60_000), 0, host.output());
  assert.ok(host.lines.includes('STOPPED'), host.output());
  assert.ok(host.lines.includes('FINISHED drain_a') && host.lines.includes('FINISHED drain_b'), host.output());
  const byName = await steps(task);
  for (const name of ['drain_a', 'drain_b']) {
    const step = byName[name];
    assert.notEqual(step.current_state, 'in_progress', JSON.stringify(step));
    assert.equal(step.results?.success, true, JSON.stringify(step));
    assert.deepEqual(step.results.result, { finished_after_shutdown_began: true, step: name });
  }
});
