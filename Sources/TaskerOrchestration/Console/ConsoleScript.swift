import TaskerModel

/// The task console's script (`/console/console.js`, served by ``ConsoleRoutes``): plain JavaScript, no
/// build step, no dependencies. It builds the page from the task API's JSON with DOM text nodes only
/// (no `innerHTML`), and polls every second while a shown task runs (the overview, the workers and the
/// DLQ every third second, the chart every tenth).
///
/// One script in one function scope, written in parts by concern, each in a file of its own:
/// ``core`` (this file: constants, DOM helpers, timestamps, credentials, requests, navigation),
/// ``overview`` (counts and the task list), ``task`` (a task's page: facts, summary, DAG, steps,
/// failures), ``stepActions`` (Retry / Resolve manually / Complete manually through upstream's
/// `PATCH …/workflow_steps/{step_uuid}`), ``dlq`` (entries, stats, investigation queue, staleness, and
/// `PATCH /v1/dlq/entry/{uuid}`), ``workers`` (the live workers), ``chart`` (throughput and latency as
/// inline SVG) and ``refresh`` (the polling loop and start-up).
enum ConsoleScript {
    /// The whole script: the parts in one function scope.
    static let source =
        [core, overview, task, stepActions, dlq, workers, chart, refresh].joined(separator: "\n") + "})();\n"

    /// `keys` as a JavaScript array literal (constant identifiers only).
    private static func array(_ keys: [String]) -> String {
        "[" + keys.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
    }

    /// The script's start: constants, DOM helpers, timestamps, credentials, requests and navigation.
    /// A failed step's exception type and trace are read under the keys of TaskerModel's
    /// `FailureDetail`, written into the script from there.
    static let core = #"""
        "use strict";
        // The task console (served by the orchestration at /console). Reads the task API (/v1/tasks…, /v1/dlq…)
        // and the console's own routes (/console/api/…), polling every second while a shown task runs (the
        // overview, the workers and the DLQ every third second, the chart every tenth); acts through upstream's
        // PATCH routes of a step and of a DLQ entry. Every value is put into the page as DOM text (textContent),
        // never as markup: step results and errors are arbitrary JSON from handlers.
        (() => {
          const POLL_MS = 1000;
          const CHART_MS = 10000;
          const PER_PAGE = 25;
          const DLQ_LIMIT = 50;
          const DLQ_PANEL_LIMIT = 20;
          const MAX_TEXT = 4000;
          const MAX_TRACE = 20000;
          const TASK_STATES = ["pending", "initializing", "enqueuing_steps", "steps_in_process", "evaluating_results",
            "waiting_for_dependencies", "waiting_for_retry", "blocked_by_failures", "complete", "error", "cancelled",
            "resolved_manually"];
          const STEP_STATES = ["pending", "enqueued", "in_progress", "enqueued_for_orchestration",
            "enqueued_as_error_for_orchestration", "waiting_for_retry", "complete", "error", "cancelled", "resolved_manually"];
          const KNOWN_STATES = new Set([...TASK_STATES, ...STEP_STATES, "healthy", "warning", "stale"]);
          const FINAL = new Set(["complete", "error", "cancelled", "resolved_manually"]);
          const CREDENTIALS_KEY = "tasker-console-credentials";
          const OPERATOR_KEY = "tasker-console-operator";
          const SVG = "http://www.w3.org/2000/svg";
          const EXCEPTION_TYPE_KEYS = \#(array(FailureDetail.exceptionTypeKeys));
          const TRACE_KEYS = \#(array(FailureDetail.traceKeys));

          const $ = (id) => document.getElementById(id);
          const view = { namespace: "", state: "", page: 1, task: null };
          const auth = { enabled: false, header: "X-API-Key" };
          let tick = 0;
          let busy = false;
          let taskFinal = false;
          /** The task shown (its TaskResponse), for the step actions. */
          let shownTask = null;

          /** A refusal of the API: its HTTP status and the API's own message. */
          class ApiError extends Error {
            constructor(status, message) {
              super(message);
              this.status = status;
            }
          }
          /** A read refused with 401 or 403: the page asks for credentials. */
          class NeedsCredentials extends ApiError {}

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
          /** Rows of a definition list from [term, value] pairs. */
          function facts(pairs) { return pairs.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v ?? "—")]); }

          // ---- timestamps: always with their zone ------------------------------------------------------
          const STAMP = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d+)?)(Z|[+-]\d{2}:?\d{2})?$/;
          /** A timestamp of the API as `YYYY-MM-DD HH:MM:SS.ffffff UTC`. The API's times are UTC: `…Z`, or
           *  without a zone where upstream's fields are naive (DLQ entries, step readiness), UTC as well. */
          function time(stamp) {
            if (!stamp) return "—";
            const m = STAMP.exec(String(stamp));
            if (!m) return String(stamp);
            return `${m[1]} ${m[2]} ${!m[3] || m[3] === "Z" ? "UTC" : "UTC" + m[3]}`;
          }
          /** The instant of an API timestamp (a naive one is UTC), in ms; NaN when it is none. */
          function instant(stamp) {
            const m = STAMP.exec(String(stamp ?? ""));
            if (!m) return NaN;
            return Date.parse(`${m[1]}T${m[2].slice(0, 12)}${m[3] || "Z"}`);
          }
          /** A <time> element: the UTC text, and the reader's own time (its zone named) as its title. */
          function when(stamp) {
            const at = instant(stamp);
            if (!Number.isFinite(at)) return el("span", {}, time(stamp));
            const local = new Date(at).toLocaleString(undefined, { timeZoneName: "short" });
            return el("time", { datetime: String(stamp), title: `your time: ${local}` }, time(stamp));
          }
          function millisBetween(from, to) {
            const a = instant(from), b = instant(to);
            return Number.isFinite(a) && Number.isFinite(b) ? ` (+${Math.max(0, b - a)} ms)` : "";
          }

          // ---- credentials ------------------------------------------------------------------------------
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
          /** The operator name the actions record (kept in this browser). */
          function recall(key) {
            try { return localStorage.getItem(key) || ""; } catch { return ""; }
          }
          function remember(key, value) {
            try { localStorage.setItem(key, value); } catch { /* storage off: typed again next time */ }
          }

          // ---- requests ---------------------------------------------------------------------------------
          async function errorMessage(response) {
            try {
              const body = await response.json();
              return (body && body.error && body.error.message) || response.statusText;
            } catch { return response.statusText; }
          }
          async function api(path) {
            const response = await fetch(path, { headers: headers(), cache: "no-store" });
            if (response.status === 401 || response.status === 403) {
              throw new NeedsCredentials(response.status, await errorMessage(response));
            }
            if (!response.ok) throw new ApiError(response.status, `${path}: ${response.status} ${await errorMessage(response)}`);
            return response.json();
          }
          /** A state-changing request (upstream's PATCH routes): a JSON body, the answer's JSON; a refusal
           *  throws an ApiError with the API's own message. */
          async function send(method, path, body) {
            const response = await fetch(path, {
              method, headers: { ...headers(), "Content-Type": "application/json" }, body: JSON.stringify(body),
              cache: "no-store" });
            let answer = null;
            try { answer = await response.json(); } catch { answer = null; }
            if (!response.ok) {
              const message = (answer && answer.error && answer.error.message) || response.statusText || "no message";
              throw new ApiError(response.status, message);
            }
            return answer;
          }
          /** What a failed request tells the reader; a refusal by auth says what to do about it. */
          function failureText(error, permission) {
            if (!(error instanceof ApiError)) return String(error && error.message ? error.message : error);
            if (error.status === 401) {
              return "Authentication required: enter an API key or bearer token under Credentials at the top "
                + `(the API said: ${error.message})`;
            }
            if (error.status === 403) {
              const hint = permission && !error.message.includes(permission) ? ` (this needs the permission ${permission})` : "";
              return `Not permitted: ${error.message}${hint}`;
            }
            return `${error.status}: ${error.message}`;
          }
          /** The answer line of an action; `outcome` ("sending", "ok" or "error") is also its `data-outcome`. */
          function answer(id, text, outcome) {
            $(id).textContent = text;
            $(id).className = `answer ${outcome}`;
            $(id).dataset.outcome = outcome;
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
          function taskLink(uuid) { return el("a", { href: hashFor({ task: String(uuid) }) }, String(uuid)); }
        """#
}
