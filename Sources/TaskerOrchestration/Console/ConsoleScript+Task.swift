extension ConsoleScript {
    /// A task's page, shown at the top of the console: its facts (`GET /v1/tasks/{uuid}`), upstream's
    /// summary (`GET /v1/tasks/{uuid}/summary`: execution and health, recommended action, template
    /// steps, step errors, DLQ), its DAG drawn as inline SVG from `/console/api/tasks/{uuid}/dag` (a
    /// layered layout: a step's column is its longest path from a root), its steps with their actions
    /// (``stepActions``), and each failure with the exception's type, message and trace.
    static let task = #"""
          // ---- one task ---------------------------------------------------------------------------------
          function outcome(results) {
            if (results === null || results === undefined) return el("span", { class: "muted" }, "—");
            if (typeof results === "object" && results.error) {
              const e = results.error;
              const message = typeof e === "object" && typeof e.message === "string" ? e.message : JSON.stringify(e);
              const kind = typeof e === "object" && e.error_type ? `${e.error_type}: ` : "";
              const shown = el("pre", { class: "error step-error" }, truncate(kind + message));
              const { type, trace } = exceptionOf(results);
              if (!type && !trace) return shown;
              return el("div", {}, shown, el("details", { class: "step-exception" },
                el("summary", {}, `exception ${type || "(type not given)"}`), el("pre", { class: "step-trace" }, truncate(trace || ""))));
            }
            const value = typeof results === "object" && Object.prototype.hasOwnProperty.call(results, "result") ? results.result : results;
            return el("pre", { class: "step-result" }, json(value));
          }

          /** The exception a foreign handler's SDK kept in metadata.custom (or error.backtrace): type and trace. */
          function exceptionOf(results) {
            const custom = results.metadata && typeof results.metadata.custom === "object" ? results.metadata.custom || {} : {};
            const text = (v) => (typeof v === "string" && v ? v : Array.isArray(v) && v.length ? v.filter((l) => typeof l === "string").join("\n") : null);
            const type = EXCEPTION_TYPE_KEYS.map((k) => custom[k]).find((v) => typeof v === "string" && v) || null;
            const trace = TRACE_KEYS.map((k) => text(custom[k])).find((v) => v) || text(results.error && results.error.backtrace);
            return { type, trace };
          }

          /** The failed steps, each with its exception's type, its message and its trace, shown open. */
          function renderFailures(steps) {
            const failed = steps.filter((s) => s.results && typeof s.results === "object"
              && (s.results.success === false || s.results.error));
            $("failures").hidden = failed.length === 0;
            $("failure-list").replaceChildren(...failed.map((s) => {
              const r = s.results;
              const e = r.error && typeof r.error === "object" ? r.error : {};
              const message = typeof e.message === "string" ? e.message : typeof r.error === "string" ? r.error : JSON.stringify(r.error ?? null);
              const { type, trace } = exceptionOf(r);
              return el("article", { class: "failure", "data-step": String(s.name) },
                el("h4", {}, `${s.name} `, stateBadge(s.state), ` attempt ${s.attempts}/${s.max_attempts}`),
                el("dl", { class: "failure-facts" }, ...facts([
                  ["exception", el("span", { class: "failure-type" }, type || "(not given by the handler)")],
                  ["error type", e.error_type ?? "—"],
                  ["retryable", typeof e.retryable === "boolean" ? (e.retryable ? "yes" : "no") : "—"],
                  ["message", el("span", { class: "failure-message" }, truncate(message))]])),
                el("pre", { class: "failure-trace" }, trace ? truncate(trace, MAX_TRACE) : "(no traceback kept)"));
            }));
          }

          /** Layer of each step: the longest path from a step without parents (cycles are cut). */
          function layersOf(steps) {
            const byId = new Map(steps.map((s) => [s.step_uuid, s]));
            const depth = new Map();
            const visiting = new Set();
            const layerOf = (id) => {
              if (depth.has(id)) return depth.get(id);
              if (visiting.has(id)) return 0;
              visiting.add(id);
              let layer = 0;
              for (const parent of Array.isArray(byId.get(id)?.parents) ? byId.get(id).parents : []) {
                if (byId.has(parent)) layer = Math.max(layer, layerOf(parent) + 1);
              }
              visiting.delete(id);
              depth.set(id, layer);
              return layer;
            };
            steps.forEach((s) => layerOf(s.step_uuid));
            return depth;
          }

          function renderDAG(steps) {
            const W = 190, H = 44, GAP_X = 60, GAP_Y = 14, PAD = 10;
            const depth = layersOf(steps);
            const columns = [];
            const position = new Map();
            for (const step of steps) {
              const layer = depth.get(step.step_uuid) || 0;
              columns[layer] = columns[layer] || [];
              position.set(step.step_uuid, { x: PAD + layer * (W + GAP_X), y: PAD + columns[layer].length * (H + GAP_Y) });
              columns[layer].push(step);
            }
            const width = PAD * 2 + Math.max(1, columns.length) * (W + GAP_X) - GAP_X;
            const height = PAD * 2 + Math.max(1, ...columns.map((c) => (c ? c.length : 0))) * (H + GAP_Y) - GAP_Y;
            const parts = [];
            for (const step of steps) {
              const to = position.get(step.step_uuid);
              for (const parent of Array.isArray(step.parents) ? step.parents : []) {
                const from = position.get(parent);
                if (!from) continue;
                const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2, mx = (x1 + x2) / 2;
                parts.push(svg("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` }));
              }
            }
            for (const step of steps) {
              const at = position.get(step.step_uuid);
              parts.push(svg("g", { class: "node " + stateClass(step.state).split(" ")[1], "data-step": String(step.name) },
                svg("title", {}, `${step.name}: ${step.state}`),
                svg("rect", { x: at.x, y: at.y, width: W, height: H }),
                svg("text", { x: at.x + 8, y: at.y + 18 }, truncate(step.name, 26)),
                svg("text", { x: at.x + 8, y: at.y + 35, class: "sub" }, `${step.state} · ${step.attempts}/${step.max_attempts}`)));
            }
            const dag = $("dag");
            dag.setAttribute("width", String(width));
            dag.setAttribute("height", String(height));
            dag.setAttribute("viewBox", `0 0 ${width} ${height}`);
            dag.replaceChildren(...parts);
          }

          /** Upstream's TaskSummaryResponse: execution, health, recommended action, template steps, DLQ. */
          function renderTaskSummary(summary) {
            const t = summary.task || {};
            const dlq = summary.dlq || {};
            const percent = Number(t.completion_percentage);
            $("summary-facts").replaceChildren(...facts([
              ["execution", t.execution_status], ["health", t.health_status],
              ["recommended action", t.recommended_action ?? "none"],
              ["completion", `${Number.isFinite(percent) ? percent.toFixed(1) : "?"} % (${t.completed_steps ?? "?"}/${t.total_steps ?? "?"} steps; `
                + `${t.pending_steps ?? "?"} pending, ${t.in_progress_steps ?? "?"} in progress, ${t.failed_steps ?? "?"} failed)`],
              ["updated", when(t.updated_at)], ["correlation id", t.correlation_id],
              ["DLQ", dlq.in_dlq ? `${dlq.dlq_reason ?? "?"} (investigation ${dlq.resolution_status ?? "?"})` : "not in the DLQ"]]));
            const byName = new Map((Array.isArray(summary.steps) ? summary.steps : []).map((s) => [s.name, s]));
            const template = summary.template && Array.isArray(summary.template.steps) ? summary.template.steps : [];
            const rows = template.map((s) => {
              const e = (byName.get(s.name) || {}).error;
              const error = e ? `${e.error_type ?? "error"}${e.retryable ? " (retryable)" : ""}${e.status_code ? ` HTTP ${e.status_code}` : ""}` : "—";
              return el("tr", { "data-step": String(s.name) }, el("td", {}, s.name), el("td", { class: "uuid" }, s.handler),
                el("td", {}, s.step_type), el("td", {}, Array.isArray(s.dependencies) && s.dependencies.length ? s.dependencies.join(", ") : "—"),
                el("td", {}, `${s.retryable ? "yes" : "no"}, at most ${s.max_attempts}`), el("td", {}, error));
            });
            $("summary-steps").tBodies[0].replaceChildren(...rows);
            $("summary-steps").hidden = rows.length === 0;
          }

          async function renderTask(uuid) {
            const path = encodeURIComponent(uuid);
            const [task, dag] = await Promise.all([api(`/v1/tasks/${path}`), api(`/console/api/tasks/${path}/dag`)]);
            shownTask = task;
            taskFinal = FINAL.has(task.status);
            $("task").hidden = false;
            $("task-title").replaceChildren(`${task.namespace}/${task.name} ${task.version} `, stateBadge(task.status));
            $("task-facts").replaceChildren(...facts([["uuid", task.task_uuid], ["state", task.status], ["created", when(task.created_at)],
              ["completed", when(task.completed_at)], ["steps", `${task.completed_steps}/${task.total_steps} complete, ${task.failed_steps} failed`],
              ["initiator", task.initiator], ["source system", task.source_system], ["reason", task.reason]]));
            $("task-context").textContent = json(task.context);
            const steps = Array.isArray(dag.steps) ? dag.steps : [];
            renderDAG(steps);
            const depth = layersOf(steps);
            const ordered = [...steps].sort((a, b) => (depth.get(a.step_uuid) || 0) - (depth.get(b.step_uuid) || 0));
            const rows = ordered.map((s) => el("tr", { "data-step": String(s.name), "data-step-uuid": String(s.step_uuid) },
              el("td", {}, s.name), el("td", {}, stateBadge(s.state)), el("td", {}, `${s.attempts}/${s.max_attempts}`),
              el("td", {}, when(s.created_at)), el("td", {}, when(s.claimed_at)),
              el("td", {}, when(s.completed_at), s.claimed_at && s.completed_at ? millisBetween(s.claimed_at, s.completed_at) : ""),
              el("td", {}, outcome(s.results)), el("td", { class: "actions" }, ...stepActionButtons(task, s))));
            if (dag.truncated) rows.push(el("tr", {}, el("td", { colspan: 8, class: "muted" }, `only the first ${steps.length} steps are shown`)));
            $("steps").tBodies[0].replaceChildren(...rows);
            renderFailures(ordered);
            panel("summary", async () => renderTaskSummary(await api(`/v1/tasks/${path}/summary`)));
          }
        """#
}
