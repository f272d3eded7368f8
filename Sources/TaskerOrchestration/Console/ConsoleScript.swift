import TaskerModel

/// The task console's script (`/console/console.js`, served by ``ConsoleRoutes``): plain JavaScript, no
/// build step, no dependencies. It builds the page from the task API's JSON with DOM text nodes only
/// (no `innerHTML`), draws a task's DAG as inline SVG (a layered layout: a step's column is its longest
/// path from a root), and polls every second while a shown task runs (the overview every third second).
/// A failed step shows its error and, when the handler's SDK kept them, the exception's type and trace
/// (the keys of TaskerModel's `FailureDetail`, written into the script from there).
enum ConsoleScript {
    /// `keys` as a JavaScript array literal (constant identifiers only).
    private static func array(_ keys: [String]) -> String {
        "[" + keys.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
    }

    static let source = #"""
        "use strict";
        // The task console (served by the orchestration at /console). Reads the task API (/v1/tasks…, /v1/dlq)
        // and the console's own routes (/console/api/…), polling every second while a shown task runs (the
        // overview every third second). Every value is put into the page as DOM text (textContent), never as
        // markup: step results and errors are arbitrary JSON from handlers.
        (() => {
          const POLL_MS = 1000;
          const PER_PAGE = 25;
          const DLQ_LIMIT = 50;
          const MAX_TEXT = 4000;
          const TASK_STATES = ["pending", "initializing", "enqueuing_steps", "steps_in_process", "evaluating_results",
            "waiting_for_dependencies", "waiting_for_retry", "blocked_by_failures", "complete", "error", "cancelled",
            "resolved_manually"];
          const STEP_STATES = ["pending", "enqueued", "in_progress", "enqueued_for_orchestration",
            "enqueued_as_error_for_orchestration", "waiting_for_retry", "complete", "error", "cancelled", "resolved_manually"];
          const KNOWN_STATES = new Set([...TASK_STATES, ...STEP_STATES]);
          const FINAL = new Set(["complete", "error", "cancelled", "resolved_manually"]);
          const CREDENTIALS_KEY = "tasker-console-credentials";
          const SVG = "http://www.w3.org/2000/svg";
          const EXCEPTION_TYPE_KEYS = \#(array(FailureDetail.exceptionTypeKeys));
          const TRACE_KEYS = \#(array(FailureDetail.traceKeys));

          const $ = (id) => document.getElementById(id);
          const view = { namespace: "", state: "", page: 1, task: null };
          const auth = { enabled: false, header: "X-API-Key" };
          let tick = 0;
          let busy = false;
          let taskFinal = false;

          class NeedsCredentials extends Error {}

          /** An element with attributes; string children become text nodes. */
          function el(tag, attributes, ...children) {
            const node = document.createElement(tag);
            for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
            for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
            return node;
          }

          function svg(tag, attributes, ...children) {
            const node = document.createElementNS(SVG, tag);
            for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
            for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
            return node;
          }

          function stateClass(state) { return "state state-" + (KNOWN_STATES.has(state) ? state : "other"); }
          function stateBadge(state) { return el("span", { class: stateClass(state) }, state ?? "?"); }
          function truncate(text, limit = MAX_TEXT) {
            const s = String(text ?? "");
            return s.length > limit ? s.slice(0, limit) + `… (${s.length - limit} more characters)` : s;
          }
          function json(value) { return truncate(JSON.stringify(value, null, 2)); }
          function time(stamp) { return stamp ? String(stamp).replace("T", " ").replace(/Z$/, "") : "—"; }
          function millisBetween(from, to) {
            const a = Date.parse(from), b = Date.parse(to);
            return Number.isFinite(a) && Number.isFinite(b) ? ` (+${Math.max(0, b - a)} ms)` : "";
          }

          // ---- credentials ----------------------------------------------------------------------------
          function readCredentials() {
            try { return JSON.parse(sessionStorage.getItem(CREDENTIALS_KEY) || "null"); } catch { return null; }
          }
          function headers() {
            const result = { Accept: "application/json" };
            const credentials = readCredentials();
            if (credentials && credentials.value) {
              if (credentials.kind === "bearer") result.Authorization = "Bearer " + credentials.value;
              else result[auth.header] = credentials.value;
            }
            return result;
          }
          function showAuth(visible, message) {
            $("auth").hidden = !visible;
            $("auth-error").textContent = message || "";
          }

          async function errorMessage(response) {
            try {
              const body = await response.json();
              return (body && body.error && body.error.message) || response.statusText;
            } catch { return response.statusText; }
          }
          async function api(path) {
            const response = await fetch(path, { headers: headers(), cache: "no-store" });
            if (response.status === 401 || response.status === 403) throw new NeedsCredentials(await errorMessage(response));
            if (!response.ok) throw new Error(`${path}: ${response.status} ${await errorMessage(response)}`);
            return response.json();
          }

          // ---- navigation (the URL fragment: #task=UUID&namespace=…&state=…&page=N) --------------------
          function readHash() {
            const p = new URLSearchParams(location.hash.slice(1));
            view.task = p.get("task") || null;
            view.namespace = p.get("namespace") || "";
            view.state = p.get("state") || "";
            view.page = Math.max(1, parseInt(p.get("page") || "1", 10) || 1);
          }
          function hashFor(changes) {
            const next = { ...view, ...changes };
            const p = new URLSearchParams();
            if (next.task) p.set("task", next.task);
            if (next.namespace) p.set("namespace", next.namespace);
            if (next.state) p.set("state", next.state);
            if (next.page > 1) p.set("page", String(next.page));
            return "#" + p.toString();
          }
          function go(changes) { location.hash = hashFor(changes); }
          function taskLink(uuid) {
            const link = el("a", { href: hashFor({ task: String(uuid) }) }, String(uuid));
            return link;
          }

          // ---- overview ---------------------------------------------------------------------------------
          function renderSummary(summary) {
            const counts = summary.counts || {};
            const states = [...TASK_STATES.filter((s) => counts[s]), ...Object.keys(counts).filter((s) => !TASK_STATES.includes(s))];
            const total = Object.values(counts).reduce((a, b) => a + (Number(b) || 0), 0);
            const chips = [["", `all ${total}`], ...states.map((s) => [s, `${s} ${counts[s]}`])].map(([state, label]) => {
              const chip = el("button", { type: "button", class: "count" + (state === view.state ? " selected" : ""), "data-state": state }, label);
              chip.addEventListener("click", () => go({ state, page: 1, task: null }));
              return chip;
            });
            chips.push(el("span", { class: "muted" }, `DLQ pending ${Number(summary.dlq_pending) || 0}`));
            $("counts").replaceChildren(...chips);
            const namespaces = Array.isArray(summary.namespaces) ? summary.namespaces.map(String) : [];
            if (view.namespace && !namespaces.includes(view.namespace)) namespaces.push(view.namespace);
            const select = $("filter-namespace");
            select.replaceChildren(el("option", { value: "" }, "all"), ...namespaces.map((n) => el("option", { value: n }, n)));
            select.value = view.namespace;
          }

          async function renderTasks() {
            const query = new URLSearchParams({ page: String(view.page), per_page: String(PER_PAGE) });
            if (view.namespace) query.set("namespace", view.namespace);
            if (view.state) query.set("status", view.state);
            const answer = await api("/v1/tasks?" + query.toString());
            const rows = (answer.tasks || []).map((t) => {
              const row = el("tr", { class: "clickable", "data-task": String(t.task_uuid) },
                el("td", {}, time(t.created_at)), el("td", {}, t.namespace), el("td", {}, `${t.name} ${t.version}`),
                el("td", {}, stateBadge(t.status)), el("td", {}, `${t.completed_steps}/${t.total_steps}`),
                el("td", { class: "uuid" }, taskLink(t.task_uuid)));
              row.addEventListener("click", () => go({ task: String(t.task_uuid) }));
              return row;
            });
            if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No tasks match.")));
            $("tasks").tBodies[0].replaceChildren(...rows);
            const p = answer.pagination || {};
            $("page-label").textContent = `page ${p.page ?? view.page} of ${Math.max(1, p.total_pages ?? 1)} (${p.total_count ?? 0} tasks)`;
            $("page-previous").disabled = !p.has_previous;
            $("page-next").disabled = !p.has_next;
            $("filter-state").value = view.state;
          }

          async function renderDLQ() {
            const entries = await api(`/v1/dlq?limit=${DLQ_LIMIT}`);
            const list = Array.isArray(entries) ? entries : [];
            $("dlq-empty").hidden = list.length > 0;
            $("dlq-entries").hidden = list.length === 0;
            $("dlq-entries").tBodies[0].replaceChildren(...list.map((d) => el("tr", {},
              el("td", {}, time(d.dlq_timestamp)), el("td", { class: "uuid" }, taskLink(d.task_uuid)), el("td", {}, d.dlq_reason),
              el("td", {}, stateBadge(d.original_state)), el("td", {}, d.resolution_status))));
          }

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

          async function renderTask(uuid) {
            const path = encodeURIComponent(uuid);
            const [task, dag] = await Promise.all([api(`/v1/tasks/${path}`), api(`/console/api/tasks/${path}/dag`)]);
            taskFinal = FINAL.has(task.status);
            $("task").hidden = false;
            $("task-title").replaceChildren(`${task.namespace}/${task.name} ${task.version} `, stateBadge(task.status));
            const facts = [["uuid", task.task_uuid], ["state", task.status], ["created", time(task.created_at)],
              ["completed", time(task.completed_at)], ["steps", `${task.completed_steps}/${task.total_steps} complete, ${task.failed_steps} failed`],
              ["initiator", task.initiator], ["source system", task.source_system], ["reason", task.reason]];
            $("task-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
            $("task-context").textContent = json(task.context);
            const steps = Array.isArray(dag.steps) ? dag.steps : [];
            renderDAG(steps);
            const depth = layersOf(steps);
            const ordered = [...steps].sort((a, b) => (depth.get(a.step_uuid) || 0) - (depth.get(b.step_uuid) || 0));
            const rows = ordered.map((s) => el("tr", { "data-step": String(s.name) },
              el("td", {}, s.name), el("td", {}, stateBadge(s.state)), el("td", {}, `${s.attempts}/${s.max_attempts}`),
              el("td", {}, time(s.created_at)), el("td", {}, time(s.claimed_at)),
              el("td", {}, time(s.completed_at) + (s.claimed_at && s.completed_at ? millisBetween(s.claimed_at, s.completed_at) : "")),
              el("td", {}, outcome(s.results))));
            if (dag.truncated) rows.push(el("tr", {}, el("td", { colspan: 7, class: "muted" }, `only the first ${steps.length} steps are shown`)));
            $("steps").tBodies[0].replaceChildren(...rows);
          }

          // ---- refresh loop -----------------------------------------------------------------------------
          function setStatus(text, failed) {
            $("status").textContent = text;
            $("status").className = failed ? "error" : "muted";
          }

          async function refresh() {
            if (busy) return;
            const overview = tick % 3 === 0;
            const taskDue = Boolean(view.task) && (overview || !taskFinal);
            tick += 1;
            if (!overview && !taskDue) return;
            busy = true;
            try {
              if (overview) {
                renderSummary(await api("/console/api/summary"));
                await renderTasks();
                await renderDLQ();
              }
              if (taskDue) await renderTask(view.task);
              if (!view.task) $("task").hidden = true;
              showAuth(false);
              document.body.dataset.loaded = "true";
              setStatus(`updated ${new Date().toLocaleTimeString()}; live, every ${POLL_MS / 1000} s`);
            } catch (error) {
              tick = 0;
              if (error instanceof NeedsCredentials) {
                showAuth(true, error.message);
                setStatus("credentials needed", true);
              } else {
                setStatus(String(error && error.message ? error.message : error), true);
              }
            } finally {
              busy = false;
            }
          }

          function restart() { readHash(); tick = 0; taskFinal = false; refresh(); }

          async function start() {
            $("filter-state").append(...TASK_STATES.map((s) => el("option", { value: s }, s)));
            $("filter-namespace").addEventListener("change", (e) => go({ namespace: e.target.value, page: 1, task: null }));
            $("filter-state").addEventListener("change", (e) => go({ state: e.target.value, page: 1, task: null }));
            $("page-previous").addEventListener("click", () => go({ page: Math.max(1, view.page - 1) }));
            $("page-next").addEventListener("click", () => go({ page: view.page + 1 }));
            $("auth-form").addEventListener("submit", (event) => {
              event.preventDefault();
              sessionStorage.setItem(CREDENTIALS_KEY, JSON.stringify({ kind: $("auth-kind").value, value: $("auth-value").value }));
              $("auth-value").value = "";
              restart();
            });
            try {
              const settings = await (await fetch("/console/api/auth", { cache: "no-store" })).json();
              auth.enabled = Boolean(settings.enabled);
              if (typeof settings.api_key_header === "string" && settings.api_key_header) auth.header = settings.api_key_header;
            } catch { /* an older orchestration: try without */ }
            window.addEventListener("hashchange", restart);
            restart();
            setInterval(refresh, POLL_MS);
          }

          document.addEventListener("DOMContentLoaded", start);
        })();
        """#
}
