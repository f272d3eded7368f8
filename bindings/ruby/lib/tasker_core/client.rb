# frozen_string_literal: true

require_relative "ffi"

module TaskerCore
  # Synchronous calls to an orchestration's REST API through the running worker's orchestration
  # client (`[worker.orchestration_client]`: base_url, timeout_ms, max_retries, auth). Each answers
  # the API's JSON (Hash, or Array for step lists and audit history). Needs a running worker in this
  # process.
  #
  #   task = TaskerCore::Client.create_task(name: "greet", namespace: "shop", context: { "name" => "Ada" })
  #   TaskerCore::Client.get_task(task["task_uuid"])["status"]
  #
  # @raise [Errors::ClientUnavailableError] the loaded library has no orchestration client
  # @raise [Errors::ClientError] the API answered an error (message: method, path, HTTP status) or
  #   could not be reached
  # @raise [Errors::FFIError] no worker runs (status ERR_NOT_RUNNING) or a bad argument
  module Client
    module_function

    # POST /v1/tasks. Extra keyword options (priority, tags, ...) are sent as they are.
    def create_task(name:, namespace: "default", context: {}, version: "1.0.0", initiator: "tasker-core-ruby",
                    source_system: "tasker-core", reason: "Task requested", **options)
      request = { "name" => name, "namespace" => namespace, "version" => version, "context" => context,
                  "initiator" => initiator, "source_system" => source_system, "reason" => reason }
      options.each { |key, value| request[key.to_s] = value }
      call(:tasker_client_create_task, JSON.generate(request))
    end

    # GET /v1/tasks/{task_uuid}.
    def get_task(task_uuid) = call(:tasker_client_get_task, task_uuid.to_s)

    # GET /v1/tasks: `limit` (1...1000) tasks from `offset` (a multiple of `limit`).
    def list_tasks(limit: 50, offset: 0, namespace: nil, status: nil)
      call(:tasker_client_list_tasks, Integer(limit), Integer(offset), namespace&.to_s, status&.to_s)
    end

    # DELETE /v1/tasks/{task_uuid}.
    def cancel_task(task_uuid) = call(:tasker_client_cancel_task, task_uuid.to_s)

    # GET /v1/tasks/{task_uuid}/workflow_steps.
    def list_task_steps(task_uuid) = call(:tasker_client_list_task_steps, task_uuid.to_s)

    # GET /v1/tasks/{task_uuid}/workflow_steps/{step_uuid}.
    def get_step(task_uuid, step_uuid) = call(:tasker_client_get_step, task_uuid.to_s, step_uuid.to_s)

    # GET /v1/tasks/{task_uuid}/workflow_steps/{step_uuid}/audit.
    def get_step_audit_history(task_uuid, step_uuid)
      call(:tasker_client_get_step_audit_history, task_uuid.to_s, step_uuid.to_s)
    end

    # GET /health.
    def health_check = call(:tasker_client_health_check)

    # Whether the loaded library has the orchestration client.
    def available? = Native::MISSING_CLIENT_FUNCTIONS.empty?

    def call(function, *args)
      unless Native.client_function?(function)
        raise Errors::ClientUnavailableError,
              "#{Native::LOADED_FROM} has no #{function}: the orchestration client needs a libTaskerWorkerFFI " \
              "built with the tasker_client_* functions (missing: #{Native::MISSING_CLIENT_FUNCTIONS.join(', ')})"
      end
      TaskerCore::FFI.call_json(function, *args)
    end
    private_class_method :call
  end
end
