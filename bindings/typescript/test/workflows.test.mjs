// TypeScript handlers on the embedded worker, through the real orchestration and PostgreSQL (one
// host process for the whole file; each test its own task). The cases of the Python SDK's
// test_python_workflows.py, plus method dispatch, resolver hints, unstorable results, domain events.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHost, submitTask, waitForTask, stepResult, steps, sqlJson } from './support/harness.mjs';

let host;
before(async () => {
  host = await startHost('workflows-host');
});
after(async () => {
  if (host) assert.equal(await host.close() ?? 0, 0);
});

const finish = (task) => waitForTask(task, { hosts: [host] });

test('a three-step chain of TypeScript handlers completes with the right results', async () => {
  const task = await submitTask('ts_chain', { number: 6 });
  assert.equal(await finish(task), 'complete');
  assert.deepEqual((await stepResult(task, 'chain_square')).result, { value: 36 });
  assert.deepEqual((await stepResult(task, 'chain_add')).result, { value: 43 });
  const verify = await stepResult(task, 'chain_verify');
  assert.equal(verify.success, true);
  assert.equal(verify.status, 'completed');
  assert.deepEqual(verify.result, { value: 43, verified: true });
});

test('a thrown error is a retryable failure with its name as error_type, its message and stack', async () => {
  const task = await submitTask('ts_error', {});
  assert.equal(await finish(task), 'error');
  const stored = await stepResult(task, 'error_explode');
  assert.equal(stored.success, false);
  assert.equal(stored.metadata.retryable, true);
  assert.equal(stored.error.error_type, 'LedgerError');
  assert.equal(stored.error.message, 'the ledger has no entry for order 42');
  assert.equal(stored.metadata.custom.exception_type, 'LedgerError');
  assert.match(stored.metadata.custom.stack, /^LedgerError: the ledger has no entry for order 42\n\s+at /);
  assert.match(stored.metadata.custom.stack, /handlers\.mjs/);
});

test('a decision point creates only the chosen branch', async () => {
  const small = await submitTask('ts_decision', { amount: 20 });
  const large = await submitTask('ts_decision', { amount: 500 });
  assert.equal(await finish(small), 'complete');
  assert.equal(await finish(large), 'complete');
  assert.deepEqual(Object.keys(await steps(small)).sort(), ['decision_check', 'decision_finalize', 'decision_route', 'decision_small']);
  assert.deepEqual(Object.keys(await steps(large)).sort(), ['decision_check', 'decision_finalize', 'decision_large', 'decision_route']);
  assert.deepEqual((await stepResult(small, 'decision_finalize')).result, { ran: ['decision_small'] });
  assert.deepEqual((await stepResult(large, 'decision_finalize')).result, { ran: ['decision_large'] });
  const route = (await stepResult(large, 'decision_route')).result;
  assert.deepEqual(route.decision_point_outcome, { type: 'create_steps', step_names: ['decision_large'] });
  assert.deepEqual(route.routing_context, { amount: 500 });
});

test('a batch analyzer creates cursor workers and the convergence step aggregates them', async () => {
  const task = await submitTask('ts_batch', { item_count: 45 });
  assert.equal(await finish(task), 'complete');
  // 45 items in batches of 10, at most 3 workers → 3 workers of 15.
  assert.deepEqual(Object.keys(await steps(task)).sort(), ['batch_collect', 'batch_plan', 'batch_work_001', 'batch_work_002', 'batch_work_003']);
  let expected = 0;
  for (let i = 0; i < 45; i++) expected += i * i;
  assert.deepEqual((await stepResult(task, 'batch_collect')).result, { value: expected, processed: 45, workers: 3 });
  const plan = (await stepResult(task, 'batch_plan')).result;
  assert.equal(plan.batch_processing_outcome.type, 'create_batches');
  assert.equal(plan.batch_processing_outcome.worker_template_name, 'batch_work');
  assert.equal(plan.batch_processing_outcome.worker_count, 3);
  const inputs = sqlJson(
    'SELECT ws.inputs FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)' +
    ` WHERE ws.task_uuid = '${task}' AND ns.name = 'batch_work_002'`);
  assert.deepEqual(inputs.cursor, { batch_id: '002', start_cursor: 15, end_cursor: 30, batch_size: 15 });
});

test('a checkpoint yield persists progress and the step resumes from it', async () => {
  const task = await submitTask('ts_checkpoint', { total: 35 });
  assert.equal(await finish(task), 'complete');
  assert.deepEqual((await stepResult(task, 'checkpoint_sum')).result, { sum: (34 * 35) / 2, resumed_at: [10, 20, 30] });
  const checkpoint = sqlJson(
    'SELECT ws.checkpoint FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)' +
    ` WHERE ws.task_uuid = '${task}' AND ns.name = 'checkpoint_sum'`);
  assert.equal(checkpoint.cursor, 30);
  assert.equal(checkpoint.items_processed, 30);
});

test('Swift built-ins (tasker.echo, tasker.noop) and TypeScript handlers run in one worker', async () => {
  const task = await submitTask('ts_mixed', { order: 7 });
  assert.equal(await finish(task), 'complete');
  const echo = (await stepResult(task, 'mixed_echo')).result;
  assert.deepEqual(echo.config, { base: 21 });
  assert.deepEqual(echo.context, { order: 7 });
  assert.deepEqual((await stepResult(task, 'mixed_double')).result, { value: 42, echoed_context: { order: 7 } });
  assert.equal((await stepResult(task, 'mixed_noop')).success, true);
  const workers = new Set();
  for (const name of ['mixed_echo', 'mixed_double', 'mixed_noop']) workers.add((await stepResult(task, name)).metadata.worker_id);
  assert.equal(workers.size, 1, [...workers].join(', '));
  assert.equal(host.exited, false);
});

test('handler.method runs the named method of the handler', async () => {
  const task = await submitTask('ts_methods', {});
  assert.equal(await finish(task), 'complete');
  assert.deepEqual((await stepResult(task, 'method_charge')).result, { charged: 100, entry: 'call' });
  assert.deepEqual((await stepResult(task, 'method_refund')).result, { refunded: 100, entry: 'refund', method: 'refund' });
});

test('a handler.method the handler lacks fails the step for good, naming callable and method', async () => {
  const task = await submitTask('ts_method_missing', {});
  assert.equal(await finish(task), 'error');
  const stored = await stepResult(task, 'method_missing');
  assert.equal(stored.success, false);
  assert.equal(stored.metadata.retryable, false);
  assert.equal(stored.error.error_type, 'method_not_found');
  assert.match(stored.error.message, /callable 'ts\.payments'/);
  assert.match(stored.error.message, /no method 'chargeback'/);
  assert.equal((await steps(task)).method_missing.attempts, 1);
});

test('a handler.resolver hint skips the chain; without one the chain resolves by priority', async () => {
  const task = await submitTask('ts_resolvers', {});
  assert.equal(await finish(task), 'complete');
  assert.deepEqual((await stepResult(task, 'hint_custom')).result, { resolved_by: 'ts_custom' });
  assert.deepEqual((await stepResult(task, 'hint_explicit')).result, { resolved_by: 'explicit_mapping' });
  // Explicit mapping (priority 10) before the custom resolver (50).
  assert.deepEqual((await stepResult(task, 'chain_default')).result, { resolved_by: 'explicit_mapping' });
  assert.deepEqual((await stepResult(task, 'by_class_name')).result, { resolved_by: 'class_lookup' });
});

test('an unknown handler.resolver fails the step for good, naming the resolver', async () => {
  const task = await submitTask('ts_resolver_unknown', {});
  assert.equal(await finish(task), 'error');
  const stored = await stepResult(task, 'unknown_resolver');
  assert.equal(stored.metadata.retryable, false);
  assert.equal(stored.error.error_type, 'resolver_not_found');
  assert.match(stored.error.message, /resolver 'no_such_resolver'/);
});

test('results that cannot be stored fail their steps for good and never stop the poller', async () => {
  const cases = [
    [{ kind: 'circular' }, 'handler_error', /not JSON: .*circular/i],
    [{ kind: 'bigint' }, 'handler_error', /not JSON: .*BigInt/],
    [{ kind: 'deep', depth: 5000 }, 'handler_error', /nested/],
    [{ kind: 'deep', depth: 300 }, 'handler_error', /nested more than 128 levels/],
    [{ kind: 'deep', depth: 125 }, 'result_not_storable', /nested more than 120 levels/],
  ];
  const tasks = [];
  for (const [context] of cases) tasks.push(await submitTask('ts_bad_result', context));
  for (const [index, [context, errorType, message]] of cases.entries()) {
    assert.equal(await finish(tasks[index]), 'error', JSON.stringify(context));
    const stored = await stepResult(tasks[index], 'bad_result');
    assert.equal(stored.success, false, JSON.stringify(context));
    assert.equal(stored.metadata.retryable, false, JSON.stringify({ context, stored }));
    assert.equal(stored.error.error_type, errorType, JSON.stringify({ context, stored }));
    assert.match(stored.error.message, message);
  }
  const chain = await submitTask('ts_chain', { number: 3 });
  assert.equal(await finish(chain), 'complete');
  assert.equal(host.exited, false);
});

test('fast domain events reach the in-process subscription', async () => {
  const task = await submitTask('ts_events', {});
  assert.equal(await finish(task), 'complete');
  await host.waitForLine('DOMAIN_EVENT ts_sdk.emitted');
});
