// A TypeScript step slower than the channel's completion timeout (1.5 s here) gets the worker's
// retryable handler_timeout result; its late completion is refused with a clear error, logged.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHost, submitTask, waitForTask, stepResult } from './support/harness.mjs';

let host;
after(async () => {
  if (host) await host.close();
});

test('a step over the completion timeout gets handler_timeout and its late result is refused', async () => {
  const config = process.env.TASKER_TS_TIMEOUT_CONFIG;
  assert.ok(config, 'TASKER_TS_TIMEOUT_CONFIG is not set');
  // The handler runs until the test creates this file (at most the template's 60 s).
  const release = join(mkdtempSync(join(tmpdir(), 'tasker-ts-timeout-')), 'release');
  host = await startHost('timeout-host', { TASKER_HOST_CONFIG: JSON.stringify({ config_path: config }), TASKER_TS_RELEASE_FILE: release });
  const task = await submitTask('ts_timeout', {});
  assert.equal(await waitForTask(task, { hosts: [host] }), 'error');
  // The handler has not returned yet (it waits for the release file): the timeout result came first.
  assert.ok(!host.lines.some((line) => line.startsWith('SLOW_FINISHED')), host.output());
  const stored = await stepResult(task, 'timeout_slow');
  assert.equal(stored.success, false);
  assert.equal(stored.error.error_type, 'handler_timeout');
  assert.equal(stored.metadata.retryable, true);
  // Its late completion is refused, saying it timed out (logged by the SDK), and changes nothing.
  writeFileSync(release, '');
  await host.waitForLine('SLOW_FINISHED');
  await host.waitForLog('result not accepted');
  const late = host.stderr.split('\n').find((line) => line.includes('result not accepted'));
  assert.match(late, /timed out/);
  assert.equal((await stepResult(task, 'timeout_slow')).error.error_type, 'handler_timeout');
  assert.equal(host.exited, false);
});
