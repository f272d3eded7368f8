extension ConsoleScript {
    /// Throughput and latency over the last minutes (`/console/api/throughput`,
    /// ``TaskQueries/consoleThroughput()``) drawn as inline SVG, no library: per minute a bar of the
    /// steps completed with the steps failed on top (left axis), and the p50 and p95 step latency as two
    /// lines (right axis). Each minute is a `g.bucket` whose `data-*` attributes and tooltip carry its
    /// figures.
    static let chart = #"""
          // ---- throughput and latency chart -------------------------------------------------------------
          /** The smallest 1, 2 or 5 × 10^k at or above `value` (an axis' top). */
          function niceCeiling(value) {
            const power = Math.pow(10, Math.floor(Math.log10(Math.max(value, 1e-9))));
            for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
            return 10 * power;
          }
          function formatMs(ms) {
            if (typeof ms !== "number" || !Number.isFinite(ms)) return "—";
            return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
          }
          /** HH:MM of a bucket's start (UTC). */
          function minuteOf(stamp) {
            const m = STAMP.exec(String(stamp ?? ""));
            return m ? m[2].slice(0, 5) : "";
          }

          function renderThroughput(data) {
            const buckets = Array.isArray(data.buckets) ? data.buckets : [];
            const W = 760, H = 230, LEFT = 46, RIGHT = 64, TOP = 14, BOTTOM = 44;
            const plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
            const slot = plotW / Math.max(1, buckets.length), barW = Math.max(2, slot * 0.7);
            const count = (v) => Number(v) || 0;
            const maxCount = niceCeiling(Math.max(1, ...buckets.map((b) => count(b.completed) + count(b.failed))));
            const latencies = buckets.flatMap((b) => [b.p50_ms, b.p95_ms]).filter((v) => typeof v === "number");
            const maxLatency = niceCeiling(Math.max(1, ...latencies));
            const yCount = (v) => TOP + plotH * (1 - v / maxCount);
            const yLatency = (v) => TOP + plotH * (1 - v / maxLatency);
            const parts = [];
            for (const f of [0, 0.5, 1]) {
              const y = TOP + plotH * (1 - f);
              parts.push(svg("line", { class: "grid", x1: LEFT, x2: LEFT + plotW, y1: y, y2: y }));
              parts.push(svg("text", { class: "axis", x: LEFT - 6, y: y + 4, "text-anchor": "end" }, String(Math.round(maxCount * f))));
              parts.push(svg("text", { class: "axis latency", x: LEFT + plotW + 6, y: y + 4 }, formatMs(maxLatency * f)));
            }
            buckets.forEach((b, i) => {
              const x = LEFT + i * slot + (slot - barW) / 2;
              const ok = count(b.completed), bad = count(b.failed);
              const latency = typeof b.p50_ms === "number" ? `; latency p50 ${formatMs(b.p50_ms)}, p95 ${formatMs(b.p95_ms)}` : "";
              parts.push(svg("g", { class: "bucket", "data-start": String(b.start), "data-completed": ok, "data-failed": bad,
                  "data-p50": b.p50_ms ?? "", "data-p95": b.p95_ms ?? "" },
                svg("title", {}, `${time(b.start)}: ${ok} completed, ${bad} failed${latency}`),
                svg("rect", { class: "completed", x, y: yCount(ok), width: barW, height: TOP + plotH - yCount(ok) }),
                svg("rect", { class: "failed", x, y: yCount(ok + bad), width: barW, height: yCount(ok) - yCount(ok + bad) })));
              if (i % 3 === 0 || i === buckets.length - 1) {
                parts.push(svg("text", { class: "axis", x: x + barW / 2, y: TOP + plotH + 16, "text-anchor": "middle" }, minuteOf(b.start)));
              }
            });
            for (const [key, name] of [["p50_ms", "p50"], ["p95_ms", "p95"]]) {
              let run = [];
              const runs = [];
              buckets.forEach((b, i) => {
                if (typeof b[key] === "number") run.push([LEFT + i * slot + slot / 2, yLatency(b[key])]);
                else if (run.length) { runs.push(run); run = []; }
              });
              if (run.length) runs.push(run);
              for (const points of runs) {
                parts.push(svg("polyline", { class: `latency ${name}`, points: points.map(([x, y]) => `${x},${y}`).join(" ") }));
                for (const [x, y] of points) parts.push(svg("circle", { class: `latency ${name}`, cx: x, cy: y, r: 2.5 }));
              }
            }
            const legend = [["completed", "steps completed"], ["failed", "steps failed"], ["p50", "latency p50"], ["p95", "latency p95"]];
            legend.forEach(([name, label], i) => {
              const x = LEFT + i * 150, y = H - 10;
              parts.push(svg("rect", { class: `legend ${name}`, x, y: y - 9, width: 12, height: 10 }));
              parts.push(svg("text", { class: "axis", x: x + 16, y }, label));
            });
            parts.push(svg("text", { class: "axis", x: LEFT + plotW, y: H - 10, "text-anchor": "end" }, "minutes, UTC"));
            const chart = $("throughput");
            chart.setAttribute("width", String(W));
            chart.setAttribute("height", String(H));
            chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
            chart.replaceChildren(...parts);
            const completed = buckets.reduce((n, b) => n + count(b.completed), 0);
            const failed = buckets.reduce((n, b) => n + count(b.failed), 0);
            $("throughput-note").textContent = `last ${data.window_minutes ?? buckets.length} minutes since ${time(data.since)}: `
              + `${completed} steps completed, ${failed} failed; latency = claim to result`
              + (data.capped ? ` (only the newest ${data.results_counted} results counted)` : "");
          }
        """#
}
