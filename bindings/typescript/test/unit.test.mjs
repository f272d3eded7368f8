// Unit tests needing no database or running worker: result and batch shapes, the step context,
// event parsing, the registry's resolver chain and method dispatch, the executor's error results,
// serialization, the API helpers (against a local HTTP server) and the addon's argument checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import tasker from '../dist/index.js';

const {
  StepHandler, StepHandlerResult, StepContext, HandlerRegistry, StepExecutor, ApiClient, ApiTimeoutError,
  apiFailure, apiSuccess, connectionFailure, cursorConfigs, createBatches, noBatches, decisionResult,
  noBranchesResult, parseStepEvent, serialize, defineHandler, defineDecisionHandler, defineBatchAnalyzer,
  defineBatchWorker, Decision, PermanentError, RetryableError, ResolverNotFoundError, MethodDispatchError, library,
} = tasker;

import { STEP, event } from './support/events.mjs';

// ---- results ---------------------------------------------------------------------------------------
test('success and failure become StepExecutionResult documents of the Python SDK shape', () => {
  const ok = StepHandlerResult.success({ value: 1 }, { note: 'x' }).toExecutionResult(STEP, 12.4, 'w1');
  assert.deepEqual(ok, { step_uuid: STEP, success: true, status: 'completed', result: { value: 1 },
    metadata: { execution_time_ms: 12, retryable: false, worker_id: 'w1', custom: { note: 'x' } } });
  const failed = StepHandlerResult.failure('boom', 'validation_error', false, { field: 'a' }, 'E1').toExecutionResult(STEP, 3, null);
  assert.deepEqual(failed, { step_uuid: STEP, success: false, status: 'failed', result: {},
    metadata: { execution_time_ms: 3, retryable: false, worker_id: null, custom: { field: 'a' }, error_type: 'validation_error', error_code: 'E1' },
    error: { message: 'boom', error_type: 'validation_error', retryable: false } });
  const defaults = StepHandlerResult.failure('x');
  assert.equal(defaults.retryable, true);
  assert.equal(defaults.errorType, 'handler_error');
});

test('decision outcomes have the decision_point_outcome shape', () => {
  assert.deepEqual(decisionResult(['b'], { amount: 5 }).result,
    { decision_point_outcome: { type: 'create_steps', step_names: ['b'] }, routing_context: { amount: 5 } });
  assert.deepEqual(noBranchesResult('none').result, { decision_point_outcome: { type: 'no_branches' }, reason: 'none' });
});

test('cursor configs and batch outcomes match the Python SDK', () => {
  assert.deepEqual(cursorConfigs(45, 10, 3).map((c) => [c.batch_id, c.start_cursor, c.end_cursor, c.batch_size]),
    [['001', 0, 15, 15], ['002', 15, 30, 15], ['003', 30, 45, 15]]);
  assert.deepEqual(cursorConfigs(25, 10).map((c) => c.batch_size), [10, 10, 5]);
  assert.deepEqual(cursorConfigs(0, 10), []);
  assert.throws(() => cursorConfigs(10, 0), RangeError);
  const created = createBatches('work', cursorConfigs(20, 10), 20).result;
  assert.deepEqual(created.batch_processing_outcome, { type: 'create_batches', worker_template_name: 'work', worker_count: 2,
    cursor_configs: cursorConfigs(20, 10), total_items: 20 });
  assert.equal(created.worker_count, 2);
  assert.deepEqual(createBatches('work', [], 0).result, { batch_processing_outcome: { type: 'no_batches' }, reason: 'empty_dataset' });
  assert.deepEqual(noBatches().result.batch_processing_outcome, { type: 'no_batches' });
});

// ---- context and events -------------------------------------------------------------------------------
test('StepContext exposes the event in camelCase', () => {
  const context = new StepContext(parseStepEvent(JSON.stringify(event({
    handler: { method: 'refund', resolver: 'explicit_mapping' },
    step: { attempts: 2, checkpoint: { cursor: 30, items_processed: 30, accumulated_results: { sum: 5 } },
      inputs: { cursor: { batch_id: '002', start_cursor: 15, end_cursor: 30, batch_size: 15 } } },
    dependencies: { chain_square: { success: true, result: { value: 36 } } },
  }))));
  assert.equal(context.taskUuid, '0190b4b4-0000-7000-8000-000000000003');
  assert.equal(context.stepUuid, STEP);
  assert.equal(context.stepName, 'chain_add');
  assert.equal(context.namespace, 'ts_sdk');
  assert.equal(context.handlerName, 'ts.test');
  assert.equal(context.handlerMethod, 'refund');
  assert.equal(context.handlerResolver, 'explicit_mapping');
  assert.equal(context.getInput('number'), 6);
  assert.equal(context.getInputOr('missing', 'd'), 'd');
  assert.equal(context.getConfig('addend'), 7);
  assert.deepEqual(context.getDependencyResult('chain_square'), { value: 36 });
  assert.equal(context.getDependencyField('chain_square', 'value'), 36);
  assert.equal(context.getDependencyResult('nope'), null);
  assert.equal(context.attempts, 2);
  assert.equal(context.maxAttempts, 3);
  assert.equal(context.retryCount, 2);
  assert.equal(context.isRetry(), true);
  assert.equal(context.isLastRetry(), false);
  assert.equal(context.hasCheckpoint(), true);
  assert.equal(context.checkpointCursor, 30);
  assert.deepEqual(context.accumulatedResults, { sum: 5 });
  assert.deepEqual(context.batchCursor, { batch_id: '002', start_cursor: 15, end_cursor: 30, batch_size: 15 });
});

test('malformed events are refused with a message naming the field', () => {
  assert.throws(() => parseStepEvent('{not json'), /not JSON/);
  assert.throws(() => parseStepEvent('[]'), /not a JSON object/);
  const noCallable = event();
  delete noCallable.task_sequence_step.step_definition.handler.callable;
  assert.throws(() => parseStepEvent(JSON.stringify(noCallable)), (error) => {
    assert.match(error.message, /handler\.callable/);
    assert.equal(error.eventId, '0190b4b4-0000-7000-8000-000000000001');
    return true;
  });
  assert.throws(() => parseStepEvent(JSON.stringify(event({ handler: { method: 5 } }))), /handler\.method/);
  // Wrong types of optional parts read as absent.
  const odd = new StepContext(parseStepEvent(JSON.stringify(event({ step: { attempts: 'x', inputs: [1] } }))));
  assert.equal(odd.attempts, 0);
  assert.deepEqual(odd.stepInputs, {});
});

// ---- registry -------------------------------------------------------------------------------------------
class Payments extends StepHandler {
  static handlerName = 'ts.test';
  async call() { return this.success({ entry: 'call' }); }
  async refund() { return this.success({ entry: 'refund' }); }
}

test('the registry resolves by explicit mapping, class lookup, hints and methods', async () => {
  const registry = new HandlerRegistry();
  registry.register(Payments);
  assert.throws(() => registry.register(Payments), /already registered/);
  class ByName extends StepHandler { static handlerName = 'by.name'; async call() { return { found: true }; } }
  registry.addClass(ByName);
  assert.deepEqual(registry.chain.listResolvers(), [['explicit_mapping', 10], ['class_lookup', 100]]);
  assert.equal((await registry.resolve('ts.test')).name, 'ts.test');
  assert.equal((await registry.resolve('ByName')).name, 'by.name');
  assert.equal(await registry.resolve('unknown'), null);
  const refund = await registry.resolve({ callable: 'ts.test', method: 'refund', resolver: null, initialization: {} });
  assert.deepEqual((await refund.call()).result, { entry: 'refund' });
  await assert.rejects(registry.resolve({ callable: 'ts.test', method: 'nope', resolver: null, initialization: {} }),
    (error) => error instanceof MethodDispatchError && /callable 'ts\.test'/.test(error.message) && /'nope'/.test(error.message));
  await assert.rejects(registry.resolve({ callable: 'ts.test', method: null, resolver: 'missing', initialization: {} }),
    (error) => error instanceof ResolverNotFoundError && /'missing'/.test(error.message));
  // A hint skips the chain: class_lookup does not know ts.test.
  assert.equal(await registry.resolve({ callable: 'ts.test', method: null, resolver: 'class_lookup', initialization: {} }), null);
});

test('a template reaches only the handler\'s own methods and modules inside the handler directory', async () => {
  const registry = new HandlerRegistry();
  registry.register(Payments);
  for (const method of ['constructor', 'toString', 'hasOwnProperty', '__defineGetter__', 'success', 'failure', 'bad name']) {
    await assert.rejects(registry.resolve({ callable: 'ts.test', method, resolver: null, initialization: {} }),
      (error) => error instanceof MethodDispatchError, method);
  }
  // Class lookup imports modules only under the handler directory (importing runs a module's code).
  const { ClassLookupResolver } = tasker;
  const lookup = new ClassLookupResolver('/work/handlers');
  for (const callable of ['/tmp/evil.js', '../../etc/evil.js', './../evil.js']) {
    assert.equal(await lookup.resolve({ callable, method: null, resolver: null, initialization: {} }), null, callable);
  }
});

test('the executor turns throws, bad returns and resolution failures into failures', async () => {
  const registry = new HandlerRegistry();
  class Thrower extends StepHandler { static handlerName = 'ts.test'; async call() { throw new TypeError('bad input'); } }
  registry.register(Thrower);
  registry.register('ts.array', { name: 'a', version: '1', call: () => [1, 2] });
  const executor = new StepExecutor(registry);
  const thrown = await executor.execute(parseStepEvent(JSON.stringify(event())));
  assert.equal(thrown.errorType, 'TypeError');
  assert.equal(thrown.errorMessage, 'bad input');
  assert.equal(thrown.retryable, true);
  assert.equal(thrown.metadata.exception_type, 'TypeError');
  assert.match(thrown.metadata.stack, /^TypeError: bad input\n/);
  const array = await executor.execute(parseStepEvent(JSON.stringify(event({ handler: { callable: 'ts.array' } }))));
  assert.equal(array.retryable, false);
  assert.match(array.errorMessage, /returned an array/);
  const missing = await executor.execute(parseStepEvent(JSON.stringify(event({ handler: { callable: 'nobody' } }))));
  assert.equal(missing.errorType, 'handler_not_found');
  assert.equal(missing.retryable, false);
  const method = await executor.execute(parseStepEvent(JSON.stringify(event({ handler: { method: 'gone' } }))));
  assert.equal(method.errorType, 'method_not_found');
  const resolver = await executor.execute(parseStepEvent(JSON.stringify(event({ handler: { resolver: 'gone' } }))));
  assert.equal(resolver.errorType, 'resolver_not_found');
  assert.equal(resolver.retryable, false);
});

test('the function style wraps returns, decisions, batches and classified errors', async () => {
  const context = new StepContext(parseStepEvent(JSON.stringify(event({ dependencies: { chain_square: { result: { value: 4 } } } }))));
  const Add = defineHandler('f.add', { depends: { square: 'chain_square' }, inputs: { n: 'number' } }, ({ square, n }) => ({ sum: square.value + n }));
  assert.equal(Add.handlerName, 'f.add');
  assert.deepEqual(await new Add().call(context), { sum: 10 });
  const Perm = defineHandler('f.perm', {}, () => { throw new PermanentError('no', { a: 1 }); });
  const perm = await new Perm().call(context);
  assert.deepEqual([perm.errorType, perm.retryable, perm.metadata], ['permanent_error', false, { a: 1 }]);
  const Retry = defineHandler('f.retry', {}, () => { throw new RetryableError('later'); });
  assert.equal((await new Retry().call(context)).retryable, true);
  const Route = defineDecisionHandler('f.route', {}, () => Decision.route(['x'], { k: 1 }));
  assert.deepEqual((await new Route().call(context)).result.decision_point_outcome, { type: 'create_steps', step_names: ['x'] });
  const Skip = defineDecisionHandler('f.skip', {}, () => Decision.skip('nothing'));
  assert.deepEqual((await new Skip().call(context)).result, { decision_point_outcome: { type: 'no_branches' }, reason: 'nothing' });
  const Plan = defineBatchAnalyzer('f.plan', { workerTemplate: 'w' }, () => ({ totalItems: 30, batchSize: 10 }));
  assert.equal((await new Plan().call(context)).result.batch_processing_outcome.worker_count, 3);
  const Work = defineBatchWorker('f.work', {}, ({ batchCursor }) => ({ cursor: batchCursor }));
  assert.deepEqual(await new Work().call(context), { cursor: null });
});

test('serialize reports circular, BigInt and too deep values', () => {
  const circular = {};
  circular.self = circular;
  assert.match(serialize(circular).error, /circular/i);
  assert.match(serialize({ n: 1n }).error, /BigInt/);
  let deep = 1;
  for (let i = 0; i < 200000; i++) deep = [deep];
  assert.match(serialize(deep).error, /nested too deeply/);
  assert.deepEqual(serialize({ a: 1 }), { json: '{"a":1}' });
});

// ---- API helpers ------------------------------------------------------------------------------------------
test('the API client classifies answers: 4xx permanent, 429 and 5xx retryable, timeouts retryable', async () => {
  const server = http.createServer((request, response) => {
    const status = Number(request.url.split('/')[1]);
    if (status === 0) return; // never answers
    response.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '7' } : {}) });
    response.end(JSON.stringify({ path: request.url, method: request.method }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Answered requests get a generous limit (a loaded machine is slow); only the one that is never
  // answered meets the short one.
  const api = new ApiClient({ baseUrl: `http://127.0.0.1:${server.address().port}`, timeoutMs: 60_000 });
  const impatient = new ApiClient({ baseUrl: `http://127.0.0.1:${server.address().port}`, timeoutMs: 300 });
  try {
    const ok = await api.post('/200', { body: { a: 1 } });
    assert.equal(ok.ok, true);
    assert.deepEqual(apiSuccess(ok).result, { status_code: 200, body: { path: '/200', method: 'POST' } });
    const notFound = apiFailure(await api.get('/404'));
    assert.deepEqual([notFound.retryable, notFound.errorType, notFound.errorCode], [false, 'permanent_error', 'HTTP_404']);
    const limited = apiFailure(await api.get('/429'));
    assert.deepEqual([limited.retryable, limited.metadata.retry_after_seconds], [true, 7]);
    assert.equal(apiFailure(await api.get('/503')).retryable, true);
    const timedOut = await impatient.get('/0').then(() => null, (error) => error);
    assert.ok(timedOut instanceof ApiTimeoutError, String(timedOut));
    assert.deepEqual([connectionFailure(timedOut).retryable, connectionFailure(timedOut).errorType], [true, 'timeout']);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

// ---- the addon -----------------------------------------------------------------------------------------------
test('the addon checks argument types and reports library errors with their status', async () => {
  const lib = library();
  const native = lib.native;
  assert.match(lib.version, /^\d+\.\d+/);
  assert.equal(lib.isRunning(), false);
  assert.throws(() => native.pollStepEvent('soon'), (e) => e instanceof TypeError && /timeoutMs must be a number/.test(e.message));
  assert.throws(() => native.pollStepEvent(2 ** 40), (e) => e instanceof RangeError);
  assert.throws(() => native.completeStepEvent(1, '{}'), (e) => e instanceof TypeError && /eventId must be a string/.test(e.message));
  assert.throws(() => native.completeStepEvent('a\u0000b', '{}'), /NUL character/);
  assert.throws(() => native.log(2, {}, null), TypeError);
  assert.throws(() => native.load(42), TypeError);
  assert.throws(() => native.load('/nonexistent/other.so'), /already loaded/);
  await assert.rejects(lib.pollStepEventText(10), (e) => e.code === 'TASKER_ERR_NOT_RUNNING' && e.status === 2 && /not running|no worker/i.test(e.message));
  await assert.rejects(lib.completeStepEventText('x', '{}'), (e) => e.status === 2 || e.status === 1);
  assert.throws(() => lib.workerStatus(), (e) => e.code === 'TASKER_ERR_NOT_RUNNING');
  await assert.rejects(lib.bootstrap({ no_such_key: 1 }), (e) => e.code === 'TASKER_ERR_INVALID_ARGUMENT' && /no_such_key/.test(e.message));
  // The orchestration client: missing from an older library, else it needs a running worker.
  await assert.rejects(new tasker.TaskerClient(lib).getTask('00000000-0000-7000-8000-000000000000'),
    (e) => e.code === 'ERR_TASKER_SYMBOL_MISSING' || e.code === 'TASKER_ERR_NOT_RUNNING');
});
