// A step event as the worker sends it, for the unit tests (unit.test.mjs, worker-unit.test.mjs).

export const STEP = '0190b4b4-0000-7000-8000-000000000002';

/** A step event as the worker sends it (snake_case), with `handler` and `step` overrides. */
export function event({ handler = {}, step = {}, context = { number: 6 }, dependencies = {} } = {}) {
  return {
    event_id: '0190b4b4-0000-7000-8000-000000000001', task_uuid: '0190b4b4-0000-7000-8000-000000000003',
    step_uuid: STEP, correlation_id: 'corr-1', trace_id: null, span_id: null,
    task_sequence_step: {
      task: { task: { task_uuid: 't', context }, task_name: 'ts_chain', task_version: '1.0.0', namespace_name: 'ts_sdk' },
      workflow_step: { name: 'chain_add', template_step_name: 'chain_add', attempts: 1, max_attempts: 3, inputs: {}, checkpoint: null, ...step },
      dependency_results: dependencies,
      step_definition: { name: 'chain_add', handler: { callable: 'ts.test', method: null, resolver: null, initialization: { addend: 7 }, ...handler } },
    },
  };
}
