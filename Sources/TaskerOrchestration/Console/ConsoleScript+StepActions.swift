extension ConsoleScript {
    /// A step's manual actions, through upstream's `PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}`
    /// (permission `steps:resolve`) with upstream's `StepManualAction` body, tagged by `action_type`:
    ///
    /// | Button | `action_type` | Fields | Offered on |
    /// |---|---|---|---|
    /// | Retry | `reset_for_retry` | `reason`, `reset_by` | a step in `error` (upstream's only state it leaves by this action) |
    /// | Resolve manually | `resolve_manually` | `reason`, `resolved_by` | a step in `error` or `waiting_for_retry`, or `pending` in a task blocked by failures or in error |
    /// | Complete manually | `complete_manually` | `completion_data` {`result`, `metadata`?}, `reason`, `completed_by` | as Resolve manually |
    ///
    /// One form below the steps table (the table is rebuilt every second; the form is not): operator
    /// and reason are required, the result must be JSON and the metadata a JSON object (checked here
    /// before anything is sent; the API checks the body again). The answer (the step's new state) or
    /// the API's error message is shown, and the task is read again at once.
    static let stepActions = #"""
          // ---- a step's manual actions ------------------------------------------------------------------
          const STEP_ACTIONS = {
            reset_for_retry: { title: "Retry", operator: "reset_by",
              help: "Resets the step's attempts and returns it to pending: the orchestration enqueues it again and a worker runs it." },
            resolve_manually: { title: "Resolve manually", operator: "resolved_by",
              help: "Marks the step resolved_manually without a result; the steps that depend on it may run." },
            complete_manually: { title: "Complete manually", operator: "completed_by",
              help: "Completes the step with the result you give (JSON): the steps that depend on it read it as the step's result." },
          };
          const ACTIONABLE_STEPS = new Set(["error", "waiting_for_retry"]);
          const BLOCKED_TASKS = new Set(["blocked_by_failures", "error"]);
          /** The step the form acts on: { task, step, name, action }. */
          let stepAction = null;

          /** The buttons of a step's row: Retry on a step in error; Resolve and Complete manually on a step
           *  that failed, waits for a retry, or is blocked (pending in a task blocked by failures). */
          function stepActionButtons(task, step) {
            const actions = [];
            if (step.state === "error") actions.push("reset_for_retry");
            if (ACTIONABLE_STEPS.has(step.state) || (BLOCKED_TASKS.has(task.status) && step.state === "pending")) {
              actions.push("resolve_manually", "complete_manually");
            }
            return actions.map((action) => {
              const button = el("button", { type: "button", class: "action", "data-action": action }, STEP_ACTIONS[action].title);
              button.addEventListener("click", () => openStepAction(task, step, action));
              return button;
            });
          }

          function openStepAction(task, step, action) {
            stepAction = { task: String(task.task_uuid), step: String(step.step_uuid), name: String(step.name), action };
            const spec = STEP_ACTIONS[action];
            $("step-action-title").textContent = `${spec.title}: step ${step.name}`;
            $("step-action-help").textContent = spec.help;
            $("step-action-completion").hidden = action !== "complete_manually";
            $("step-action-error").textContent = "";
            answer("step-action-answer", "", "");
            $("step-action").dataset.action = action;
            if (!$("step-action-operator").value) $("step-action-operator").value = recall(OPERATOR_KEY);
            $("step-action").hidden = false;
            $("step-action-reason").focus();
          }

          function closeStepAction() {
            stepAction = null;
            $("step-action").hidden = true;
            $("step-action-error").textContent = "";
          }

          /** Upstream's StepManualAction for the form's fields: { body } or { error } (nothing is sent). */
          function stepActionBody(action, operator, reason, resultText, metadataText) {
            const spec = STEP_ACTIONS[action];
            if (!spec) return { error: `unknown action ${action}` };
            if (!operator.trim()) return { error: "Say who you are (operator): it is recorded with the action." };
            if (!reason.trim()) return { error: "Give a reason: it is recorded with the action." };
            const body = { action_type: action, reason: reason.trim(), [spec.operator]: operator.trim() };
            if (action !== "complete_manually") return { body };
            if (!resultText.trim()) return { error: "Give the step's result as JSON, e.g. {\"value\": 42}." };
            let result;
            try { result = JSON.parse(resultText); } catch (e) { return { error: `The result is not JSON: ${e.message}` }; }
            const completion = { result };
            if (metadataText.trim()) {
              let metadata;
              try { metadata = JSON.parse(metadataText); } catch (e) { return { error: `The metadata is not JSON: ${e.message}` }; }
              if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) {
                return { error: "The metadata must be a JSON object, e.g. {\"ticket\": \"OPS-1\"}." };
              }
              completion.metadata = metadata;
            }
            body.completion_data = completion;
            return { body };
          }

          async function submitStepAction(event) {
            event.preventDefault();
            if (!stepAction) return;
            const { task, step, name, action } = stepAction;
            const operator = $("step-action-operator").value;
            const { body, error } = stepActionBody(action, operator, $("step-action-reason").value,
              $("step-action-result").value, $("step-action-metadata").value);
            if (error) {
              $("step-action-error").textContent = error;
              return;
            }
            remember(OPERATOR_KEY, operator.trim());
            const title = STEP_ACTIONS[action].title;
            $("step-action-send").disabled = true;
            answer("step-action-answer", `${title} of step ${name}: sending…`, "sending");
            try {
              const changed = await send("PATCH", `/v1/tasks/${encodeURIComponent(task)}/workflow_steps/${encodeURIComponent(step)}`, body);
              const state = changed && changed.current_state ? changed.current_state : "changed";
              answer("step-action-answer", `${title} of step ${name}: done, the step is now ${state}.`, "ok");
              $("step-action-reason").value = "";
              $("step-action-result").value = "";
              $("step-action-metadata").value = "";
              closeStepAction();
            } catch (failure) {
              if (failure instanceof ApiError && failure.status === 401) showAuth(true, failure.message);
              answer("step-action-answer", `${title} of step ${name} refused: ${failureText(failure, "steps:resolve")}`, "error");
            } finally {
              $("step-action-send").disabled = false;
              refreshNow();
            }
          }
        """#
}
