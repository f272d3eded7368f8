// The orchestration client (TaskerClient over tasker_client_*), configured by the worker's
// [worker.orchestration_client] (TASKER_TS_CLIENT_CONFIG points it at the test's orchestration).
// Needs a libTaskerWorkerFFI.so exporting the tasker_client_* functions.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import tasker from '../dist/index.js';
import { register } from './fixtures/handlers.mjs';
import { waitFor } from './support/harness.mjs';

const { TaskerClient, TaskerClientError, Worker } = tasker;
const worker = new Worker({ config: { config_path: process.env.TASKER_TS_CLIENT_CONFIG } });
register(worker.registry);
const client = new TaskerClient(worker.lib);
let chain;

before(async () => {
  assert.ok(process.env.TASKER_TS_CLIENT_CONFIG, 'TASKER_TS_CLIENT_CONFIG is not set');
  await worker.start();
});
after(async () => {
  await worker.stop();
});

test('healthCheck answers the orchestration /health', async () => {
  const health = await client.healthCheck();
  assert.equal(typeof health.status, 'string', JSON.stringify(health));
});

test('createTask creates a task that the worker completes; getTask follows it', async () => {
  const created = await client.createTask({ name: 'ts_chain', namespace: 'ts_sdk', context: { number: 5 }, reason: 'client test' });
  assert.match(created.task_uuid, /^[0-9a-f-]{36}$/);
  chain = created.task_uuid;
  const done = await waitFor(async () => {
    const task = await client.getTask(chain);
    return ['complete', 'error'].includes(task.status) ? task : null;
  });
  assert.equal(done.status, 'complete');
  assert.equal(done.name, 'ts_chain');
  assert.equal(done.namespace, 'ts_sdk');
});

test('listTasks pages and filters by namespace', async () => {
  const listed = await client.listTasks({ limit: 10, namespace: 'ts_sdk' });
  assert.ok(Array.isArray(listed.tasks), JSON.stringify(listed));
  assert.ok(listed.tasks.some((task) => task.task_uuid === chain));
  assert.equal(listed.pagination.per_page, 10);
});

test('listTaskSteps, getStep and getStepAuditHistory read the steps', async () => {
  const steps = await client.listTaskSteps(chain);
  assert.deepEqual(steps.map((step) => step.name).sort(), ['chain_add', 'chain_square', 'chain_verify']);
  const verify = steps.find((step) => step.name === 'chain_verify');
  const one = await client.getStep(chain, verify.step_uuid);
  assert.equal(one.step_uuid, verify.step_uuid);
  assert.equal(one.current_state, 'complete');
  const audit = await client.getStepAuditHistory(chain, verify.step_uuid);
  assert.ok(Array.isArray(audit) && audit.length >= 1, JSON.stringify(audit));
  assert.equal(audit[0].step_name, 'chain_verify');
});

test('cancelTask cancels a running task', async () => {
  const created = await client.createTask({ name: 'ts_drain', namespace: 'ts_sdk', context: {} });
  const cancelled = await client.cancelTask(created.task_uuid);
  assert.equal(cancelled.cancelled, true, JSON.stringify(cancelled));
  assert.equal(cancelled.task.status, 'cancelled', JSON.stringify(cancelled));
  assert.equal((await client.getTask(created.task_uuid)).status, 'cancelled');
});

test('an API error is a TaskerClientError with the status TASKER_ERR_CLIENT and the HTTP status', async () => {
  await assert.rejects(client.getTask('00000000-0000-7000-8000-000000000000'), (error) => {
    assert.ok(error instanceof TaskerClientError, String(error));
    assert.equal(error.code, 'TASKER_ERR_CLIENT');
    assert.equal(error.status, 7);
    assert.match(error.message, /404/);
    return true;
  });
});
