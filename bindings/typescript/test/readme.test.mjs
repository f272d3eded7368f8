// The README's example (examples/hello/hello.ts, compiled by build.sh) runs as written: it serves the
// ts_example/greeting template, completes a task, fails a bad one for good, and stops on SIGTERM (exit 0).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Host, PACKAGE_DIR, submitTask, waitForTask, stepResult } from './support/harness.mjs';

let host;
after(async () => {
  if (host) await host.close();
});

test('the README example completes a greeting task and stops cleanly', async () => {
  host = new Host('readme-example', join(PACKAGE_DIR, 'build', 'examples', 'hello', 'hello.js'), {
    TASKER_TEMPLATE_PATH: join(PACKAGE_DIR, 'examples', 'hello', 'templates'),
  });
  await host.waitForLine('READY', 120_000);
  const task = await submitTask('greeting', { name: 'Ada' }, 'ts_example');
  assert.equal(await waitForTask(task, { hosts: [host] }), 'complete');
  assert.deepEqual((await stepResult(task, 'greet')).result, { greeting: 'Hello, Ada!' });
  assert.deepEqual((await stepResult(task, 'shout')).result, { shouted: 'HELLO, ADA!' });
  const invalid = await submitTask('greeting', { name: '' }, 'ts_example');
  assert.equal(await waitForTask(invalid, { hosts: [host] }), 'error');
  const failed = await stepResult(invalid, 'greet');
  assert.deepEqual([failed.error.error_type, failed.metadata.retryable], ['validation_error', false]);
  assert.equal(await host.terminate(), 0, host.output());
  assert.ok(host.lines.includes('STOPPED'), host.output());
});
