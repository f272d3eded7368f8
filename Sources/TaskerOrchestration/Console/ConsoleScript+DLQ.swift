extension ConsoleScript {
    /// The dead-letter queue, on upstream's routes: the entries (`GET /v1/dlq`), the statistics by reason
    /// (`GET /v1/dlq/stats`, permission `dlq:stats`), the investigation queue by priority
    /// (`GET /v1/dlq/investigation-queue`) and the tasks near or past their staleness threshold
    /// (`GET /v1/dlq/staleness`). An entry is investigated (notes) or resolved through
    /// `PATCH /v1/dlq/entry/{dlq_entry_uuid}` (permission `dlq:update`) with upstream's
    /// `UpdateInvestigationRequest` fields `resolution_status`, `resolution_notes`, `resolved_by` (the
    /// fields left empty are not sent: upstream keeps their values); the answer's `message` or the
    /// API's error is shown and the DLQ is read again.
    static let dlq = #"""
          // ---- dead-letter queue ------------------------------------------------------------------------
          /** The entry the form acts on: { entry, task }. */
          let dlqAction = null;

          function dlqActionButtons(entry) {
            const actions = [["investigate", "Investigate"]];
            // Upstream's answers spell the status in PascalCase ("Pending"); requests take either.
            if (String(entry.resolution_status ?? "").toLowerCase() === "pending") actions.push(["resolve", "Resolve"]);
            return actions.map(([action, label]) => {
              const button = el("button", { type: "button", class: "action", "data-action": action }, label);
              button.addEventListener("click", () => openDLQAction(entry.dlq_entry_uuid, entry.task_uuid, action));
              return button;
            });
          }

          async function renderDLQ() {
            const entries = await api(`/v1/dlq?limit=${DLQ_LIMIT}`);
            const list = Array.isArray(entries) ? entries : [];
            $("dlq-empty").hidden = list.length > 0;
            $("dlq-entries").hidden = list.length === 0;
            $("dlq-entries").tBodies[0].replaceChildren(...list.map((d) => el("tr", { "data-entry": String(d.dlq_entry_uuid), "data-task": String(d.task_uuid) },
              el("td", {}, when(d.dlq_timestamp)), el("td", { class: "uuid" }, taskLink(d.task_uuid)), el("td", {}, d.dlq_reason),
              el("td", {}, stateBadge(d.original_state)),
              el("td", { class: "resolution" }, d.resolution_status,
                d.resolution_timestamp ? el("div", { class: "muted" }, when(d.resolution_timestamp)) : "",
                d.resolved_by ? el("div", { class: "muted" }, `by ${d.resolved_by}`) : ""),
              el("td", { class: "notes" }, truncate(d.resolution_notes ?? "")),
              el("td", { class: "actions" }, ...dlqActionButtons(d)))));
          }

          async function renderDLQStats() {
            const stats = await api("/v1/dlq/stats");
            const rows = (Array.isArray(stats) ? stats : []).map((s) => el("tr", { "data-reason": String(s.dlq_reason) },
              el("td", {}, s.dlq_reason), el("td", {}, s.total_entries), el("td", {}, s.pending), el("td", {}, s.manually_resolved),
              el("td", {}, s.permanent_failures), el("td", {}, s.cancelled), el("td", {}, when(s.oldest_entry)), el("td", {}, when(s.newest_entry)),
              el("td", {}, typeof s.avg_resolution_time_minutes === "number" ? s.avg_resolution_time_minutes.toFixed(1) : "—")));
            if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 9, class: "muted" }, "No DLQ entries.")));
            $("dlq-stats").tBodies[0].replaceChildren(...rows);
          }

          async function renderInvestigationQueue() {
            const queue = await api(`/v1/dlq/investigation-queue?limit=${DLQ_PANEL_LIMIT}`);
            const rows = (Array.isArray(queue) ? queue : []).map((q) => el("tr", { "data-entry": String(q.dlq_entry_uuid) },
              el("td", {}, Number(q.priority_score).toFixed(1)), el("td", { class: "uuid" }, taskLink(q.task_uuid)),
              el("td", {}, `${q.namespace_name ?? "?"}/${q.task_name ?? "?"}`), el("td", {}, q.dlq_reason),
              el("td", {}, `${Number(q.minutes_in_dlq).toFixed(1)} min`), el("td", {}, stateBadge(q.current_state ?? q.original_state)),
              el("td", { class: "actions" }, ...dlqActionButtons({ ...q, resolution_status: "pending" }))));
            if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "Nothing to investigate.")));
            $("dlq-queue").tBodies[0].replaceChildren(...rows);
          }

          async function renderStaleness() {
            const tasks = await api(`/v1/dlq/staleness?limit=${DLQ_PANEL_LIMIT}`);
            const rows = (Array.isArray(tasks) ? tasks : []).map((s) => el("tr", { "data-task": String(s.task_uuid) },
              el("td", {}, stateBadge(s.health_status)), el("td", { class: "uuid" }, taskLink(s.task_uuid)),
              el("td", {}, `${s.namespace_name ?? "?"}/${s.task_name ?? "?"}`), el("td", {}, stateBadge(s.current_state)),
              el("td", {}, `${s.time_in_state_minutes} of ${s.staleness_threshold_minutes} min`), el("td", {}, `${s.task_age_minutes} min`),
              el("td", {}, s.priority)));
            if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No task is waiting.")));
            $("dlq-staleness").tBodies[0].replaceChildren(...rows);
          }

          function openDLQAction(entry, task, action) {
            dlqAction = { entry: String(entry), task: String(task) };
            $("dlq-action-title").textContent = `${action === "resolve" ? "Resolve" : "Investigate"}: DLQ entry ${entry} (task ${task})`;
            $("dlq-action-status").value = action === "resolve" ? "manually_resolved" : "";
            $("dlq-action-error").textContent = "";
            answer("dlq-action-answer", "", "");
            if (!$("dlq-action-by").value) $("dlq-action-by").value = recall(OPERATOR_KEY);
            $("dlq-action").dataset.entry = String(entry);
            $("dlq-action").hidden = false;
            $("dlq-action-notes").focus();
          }

          function closeDLQAction() {
            dlqAction = null;
            $("dlq-action").hidden = true;
            $("dlq-action-error").textContent = "";
          }

          /** Upstream's UpdateInvestigationRequest for the form's fields: { body } or { error }. */
          function dlqActionBody(status, notes, by) {
            if (!status && !notes.trim()) return { error: "Choose a resolution or write investigation notes." };
            if (!by.trim()) return { error: "Say who you are (resolved by): it is recorded with the entry." };
            const body = { resolved_by: by.trim() };
            if (status) body.resolution_status = status;
            if (notes.trim()) body.resolution_notes = notes.trim();
            return { body };
          }

          async function submitDLQAction(event) {
            event.preventDefault();
            if (!dlqAction) return;
            const { entry } = dlqAction;
            const by = $("dlq-action-by").value;
            const { body, error } = dlqActionBody($("dlq-action-status").value, $("dlq-action-notes").value, by);
            if (error) {
              $("dlq-action-error").textContent = error;
              return;
            }
            remember(OPERATOR_KEY, by.trim());
            $("dlq-action-send").disabled = true;
            answer("dlq-action-answer", `DLQ entry ${entry}: sending…`, "sending");
            try {
              const result = await send("PATCH", `/v1/dlq/entry/${encodeURIComponent(entry)}`, body);
              answer("dlq-action-answer", `DLQ entry ${entry}: ${(result && result.message) || "updated"}.`, "ok");
              $("dlq-action-notes").value = "";
              closeDLQAction();
            } catch (failure) {
              if (failure instanceof ApiError && failure.status === 401) showAuth(true, failure.message);
              answer("dlq-action-answer", `DLQ entry ${entry} not updated: ${failureText(failure, "dlq:update")}`, "error");
            } finally {
              $("dlq-action-send").disabled = false;
              refreshDLQ();
            }
          }

          /** The DLQ's panels, each on its own (a key without `dlq:stats` still sees the entries). */
          /** The staleness list scans every unfinished task (upstream's view): read every 30 s, not every poll. */
          const STALENESS_MS = 30000;
          let stalenessAt = 0;

          function refreshDLQ() {
            panel("dlq", renderDLQ);
            panel("dlq-stats", renderDLQStats);
            panel("dlq-queue", renderInvestigationQueue);
            if (Date.now() - stalenessAt >= STALENESS_MS) {
              stalenessAt = Date.now();
              panel("dlq-staleness", renderStaleness);
            }
          }
        """#
}
