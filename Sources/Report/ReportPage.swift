import CallLog

/// The report as one self-contained HTML file: inline CSS, the data as JSON, and a small
/// script that draws every chart on `<canvas>` (no library, no network access).
///
/// Text from the database (call ids, labels, finding details) only ever reaches the page
/// through `textContent` and the JSON block, whose `<` are escaped, so a log cannot inject
/// markup or script.
public enum ReportPage {
    public static func html(_ data: ReportData) -> String {
        let json = escapeForScript(data.json.serialized())
        return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            + "<title>callstats report</title><style>\(css)</style></head><body>"
            + body.replacingOccurrences(of: conferencesPlace, with: data.hasConferences ? conferencesSection : "")
            + "<script type=\"application/json\" id=\"data\">\(json)</script>"
            + "<script>\(script)</script></body></html>\n"
    }

    /// `<` becomes `\u003c` (valid inside JSON strings, the only place it can occur), so no
    /// `</script>` or `<!--` in the data can end the block early.
    static func escapeForScript(_ json: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(json.utf8.count)
        for byte in json.utf8 {
            if byte == UInt8(ascii: "<") { out.append(contentsOf: "\\u003c".utf8) } else { out.append(byte) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static let body = """
        <header><h1>callstats report</h1><div id="meta"></div></header>
        <section id="filters"><label>From <select id="from"></select></label>
        <label>To <select id="to"></select></label>
        <label>Dimension <select id="dim"></select></label>
        <label>Value <select id="val"></select></label>
        <span class="note">Breakdowns follow the time range; charts and distributions follow both filters.</span></section>
        <div id="errors"></div>
        <section><h2>Summary</h2><div id="summary" class="tiles"></div></section>
        <section><h2>Quality over time</h2>
        <div class="grid2"><figure><figcaption>Share of answered calls by grade</figcaption><canvas id="grades" width="640" height="240"></canvas><div class="legend" id="grades-legend"></div></figure>
        <figure><figcaption>MOS-CQ per bucket: median (p50) and tail (p5)</figcaption><canvas id="mos" width="640" height="240"></canvas><div class="legend" id="mos-legend"></div></figure></div></section>
        <section><h2>Distributions</h2><div class="grid3" id="hists"></div></section>
        <section><h2>Breakdowns</h2><div class="grid2" id="breakdowns"></div></section>
        <section><h2>Worst calls</h2><p class="note">Poor calls, lowest sustained MOS first, then calls without media; click a row to see it on one time axis.</p>
        <div class="scroll"><table id="worst"><thead></thead><tbody></tbody></table></div></section>
        <section id="drill"><h2>Call drill-down</h2><div id="drill-title" class="note">Select a call above.</div><div id="drill-charts"></div></section>
        \(conferencesPlace)
        <footer id="status"></footer>
        """

    /// Where the conferences section goes in `body`: only a database with conferences has one.
    static let conferencesPlace = "<!-- conferences -->"

    static let conferencesSection = """
        <section id="conferences" data-part="conferences"><h2>Conferences</h2><p class="note">Group calls through a media server, most poor participant-minutes first \
        (the time range applies); click a row to see whose network spoiled whose call.</p>
        <div class="scroll"><table id="conf-list"><thead></thead><tbody></tbody></table></div></section>
        <section id="conf-drill" data-part="conferences"><h2>Conference drill-down</h2><div id="conf-title" class="note">Select a conference above.</div>
        <div class="legend" id="conf-legend"></div><div class="scroll" id="conf-matrix"></div><div id="conf-offenders"></div></section>
        """

    static let css = """
        :root{--good:#2e9d5b;--fair:#e3a72f;--poor:#d9534f;--nomedia:#6c4a9e;--ink:#1d2330;--mute:#687083;--line:#e3e6ec}
        *{box-sizing:border-box}body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:var(--ink);margin:0;background:#f6f7f9}
        header{background:#1d2330;color:#fff;padding:14px 24px;display:flex;align-items:baseline;gap:24px}h1{font-size:20px;margin:0}
        #meta{color:#c9ceda;font-size:13px}section{background:#fff;margin:14px 24px;padding:12px 16px;border:1px solid var(--line);border-radius:6px}
        h2{font-size:16px;margin:0 0 10px}figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}
        canvas{width:100%;height:auto;display:block}.grid2{display:grid;grid-template-columns:1fr 1fr;gap:16px}
        .grid3{display:grid;grid-template-columns:repeat(3,1fr);gap:16px}#filters{display:flex;flex-wrap:wrap;gap:14px;align-items:center}
        select{font:inherit;padding:2px 4px}.note{color:var(--mute);font-size:12px}.tiles{display:flex;gap:12px;flex-wrap:wrap}
        .tile{border:1px solid var(--line);border-radius:6px;padding:8px 14px;min-width:120px}.tile b{display:block;font-size:22px}
        .legend span{display:inline-block;margin-right:12px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
        table{border-collapse:collapse;width:100%}th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
        th{font-size:12px;color:var(--mute);font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
        td.why{white-space:normal;min-width:300px}.scroll{max-height:460px;overflow:auto}
        tr.pick{cursor:pointer}tr.pick:hover{background:#eef3fb}tr.sel{background:#dde8f8}
        .chip{display:inline-block;border-radius:3px;padding:0 5px;margin:1px 3px 1px 0;font-size:11px;color:#fff}
        .chip.poor{background:var(--poor)}.chip.warn{background:var(--fair)}.chip.info{background:var(--mute)}
        .bar{height:10px;background:var(--poor);border-radius:2px;display:inline-block;vertical-align:middle}
        #errors{color:#b00020;margin:0 24px;white-space:pre-wrap}footer{color:var(--mute);font-size:11px;margin:8px 24px 24px}
        .causes{display:inline-flex;height:10px;width:120px;background:var(--line);border-radius:2px;overflow:hidden;vertical-align:middle}.causes i{display:block;height:10px}
        table.matrix{width:auto;border-collapse:separate;border-spacing:1px}table.matrix th,table.matrix td{padding:0;border:0;font-size:11px}
        table.matrix th.who{padding-right:8px;text-align:right;font-weight:600;color:var(--ink);max-width:220px;overflow:hidden;text-overflow:ellipsis}
        table.matrix th.t{color:var(--mute);font-weight:400;text-align:left;height:16px;overflow:visible;max-width:14px}
        table.matrix td{width:14px;min-width:14px;height:20px;text-align:center;color:#fff;font-weight:700;line-height:20px}
        .s0{background:#d5d9e0}.s1{background:var(--good)}.s2{background:var(--fair)}.s3{background:var(--poor)}
        #conf-offenders p{margin:6px 0}body[data-focus] > section:not([data-part]){display:none}
        @media (max-width:1000px){.grid2,.grid3{grid-template-columns:1fr}}
        """

    static let script = #"""
        "use strict";
        const charts = {drawn: 0};
        window.addEventListener("error", e => fail(e.message));
        function fail(msg) { document.getElementById("errors").textContent += "Error: " + msg + "\n"; document.body.dataset.rendered = "error"; }
        const D = JSON.parse(document.getElementById("data").textContent);
        // Drill-downs by call id. A call id is data: in a plain object, an id such as
        // "constructor" or "__proto__" without a drill-down would find Object.prototype's
        // member instead of nothing, so lookups go through a Map (own entries only).
        const drills = new Map(Object.entries(D.drill));
        const COLORS = {good: "#2e9d5b", fair: "#e3a72f", poor: "#d9534f", no_media: "#6c4a9e", unmeasured: "#9aa1ad", p50: "#2b6cb0", p5: "#d9534f", loss: "#d9534f", jitter: "#e3a72f", rtt: "#6c4a9e", kbps: "#2b6cb0", mos: "#2e9d5b", fps: "#2b6cb0"};
        const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined && text !== null) e.textContent = text; return e; };
        const fmt = (x, d) => x === null || x === undefined || !isFinite(x) ? "–" : Number(x).toFixed(d);
        const count = v => v >= 1e6 ? +(v / 1e6).toFixed(2) + "M" : v >= 1e4 ? +(v / 1e3).toFixed(1) + "k" : v.toFixed(0);
        const thousands = v => typeof v === "number" ? v.toLocaleString("en-US") : v;
        const iso = ms => new Date(ms).toISOString().replace("T", " ").slice(0, 16);
        const bucketMs = D.meta.period === "hour" ? 3600000 : 86400000;
        const cols = {}; D.series.columns.forEach((c, i) => cols[c] = i);
        const rows = D.series.rows;
        const buckets = [...new Set(rows.map(r => r[cols.bucket_ts]))].sort((a, b) => a - b);

        // ---- filters
        const state = {from: buckets[0], to: buckets[buckets.length - 1], dim: "all", val: "*"};
        function option(sel, value, text) { const o = el("option", null, text); o.value = value; sel.appendChild(o); }
        function setupFilters() {
          const from = document.getElementById("from"), to = document.getElementById("to");
          buckets.forEach(b => { option(from, b, iso(b)); option(to, b, iso(b)); });
          if (buckets.length) { from.value = state.from; to.value = state.to; }
          const dim = document.getElementById("dim");
          option(dim, "all", "all calls"); D.dimensions.forEach(d => option(dim, d, d));
          const fillValues = () => {
            const val = document.getElementById("val"); val.textContent = "";
            if (state.dim === "all") { option(val, "*", "*"); return; }
            const vals = [...new Set(rows.filter(r => r[cols.dimension] === state.dim).map(r => r[cols.value]))].sort();
            vals.forEach(v => option(val, v, v)); state.val = vals[0];
          };
          fillValues();
          from.onchange = () => { state.from = +from.value; draw(); };
          to.onchange = () => { state.to = +to.value; draw(); };
          dim.onchange = () => { state.dim = dim.value; state.val = "*"; fillValues(); draw(); };
          document.getElementById("val").onchange = e => { state.val = e.target.value; draw(); };
        }
        const inRange = b => b >= state.from && b <= state.to;
        const selected = () => rows.filter(r => r[cols.dimension] === state.dim && r[cols.value] === state.val && inRange(r[cols.bucket_ts]));

        // ---- canvas helpers
        function canvasCtx(c) {
          const ratio = window.devicePixelRatio || 1, w = c.width, h = c.height;
          if (!c.dataset.w) { c.dataset.w = w; c.dataset.h = h; c.width = w * ratio; c.height = h * ratio; }
          const ctx = c.getContext("2d"); ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
          ctx.clearRect(0, 0, +c.dataset.w, +c.dataset.h); ctx.font = "11px system-ui, sans-serif"; return [ctx, +c.dataset.w, +c.dataset.h];
        }
        // A round axis top at or above v: 1, 2, 2.5 or 5 times a power of ten.
        function nice(v) { if (!(v > 0)) return 1; const p = Math.pow(10, Math.floor(Math.log10(v))); for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p; return 10 * p; }
        function axes(ctx, w, h, pad, yMax, yLabel, yTicks) {
          ctx.strokeStyle = "#e3e6ec"; ctx.fillStyle = "#687083"; ctx.textAlign = "right";
          for (let i = 0; i <= yTicks; i++) {
            const v = yMax * i / yTicks, y = h - pad.b - (h - pad.t - pad.b) * i / yTicks;
            ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(w - pad.r, y); ctx.stroke();
            ctx.fillText(yLabel(v), pad.l - 4, y + 4);
          }
        }
        function xLabels(ctx, w, h, pad, labels, n) {
          ctx.fillStyle = "#687083"; ctx.textAlign = "center";
          const step = Math.max(1, Math.ceil(labels.length / n));
          labels.forEach((t, i) => { if (i % step === 0) ctx.fillText(t, pad.l + (w - pad.l - pad.r) * (i + 0.5) / labels.length, h - pad.b + 14); });
        }
        function empty(ctx, w, h) { ctx.fillStyle = "#687083"; ctx.textAlign = "center"; ctx.fillText("no data in this selection", w / 2, h / 2); }
        function legend(id, items) { const l = document.getElementById(id); l.textContent = ""; items.forEach(([name, color]) => { const s = el("span"); const i = el("i"); i.style.background = color; s.appendChild(i); s.appendChild(document.createTextNode(name)); l.appendChild(s); }); }
        const shortTime = b => D.meta.period === "hour" ? iso(b).slice(5, 13) + "h" : iso(b).slice(0, 10);

        // ---- quality over time
        function drawGrades(sel) {
          const c = document.getElementById("grades"), [ctx, w, h] = canvasCtx(c), pad = {l: 40, r: 8, t: 8, b: 22};
          const keys = ["good", "fair", "poor", "no_media", "unmeasured"];
          legend("grades-legend", keys.map(k => [k.replace("_", " "), COLORS[k]]));
          axes(ctx, w, h, pad, 100, v => v.toFixed(0) + "%", 4);
          if (!sel.length) return empty(ctx, w, h);
          const bw = (w - pad.l - pad.r) / sel.length;
          sel.forEach((r, i) => {
            const answered = keys.reduce((s, k) => s + r[cols[k]], 0); if (!answered) return;
            let y = h - pad.b;
            keys.forEach(k => { const hh = (h - pad.t - pad.b) * r[cols[k]] / answered; ctx.fillStyle = COLORS[k]; ctx.fillRect(pad.l + i * bw + bw * 0.1, y - hh, Math.max(1, bw * 0.8), hh); y -= hh; });
          });
          xLabels(ctx, w, h, pad, sel.map(r => shortTime(r[cols.bucket_ts])), 8); charts.drawn++;
        }
        function lineChart(c, xs, series, yMax, yFmt, xFmt, marks, yTicks) {
          const [ctx, w, h] = canvasCtx(c), pad = {l: 44, r: 8, t: 8, b: 22};
          axes(ctx, w, h, pad, yMax, yFmt, yTicks || 4);
          if (!xs.length) return empty(ctx, w, h);
          const x0 = xs[0], x1 = xs[xs.length - 1] === x0 ? x0 + 1 : xs[xs.length - 1];
          const X = x => pad.l + (w - pad.l - pad.r) * (x - x0) / (x1 - x0), Y = v => h - pad.b - (h - pad.t - pad.b) * Math.min(v, yMax) / yMax;
          (marks || []).forEach(m => {
            if (m.until !== undefined) { ctx.fillStyle = m.color; ctx.fillRect(X(m.at), pad.t, Math.max(2, X(m.until) - X(m.at)), h - pad.t - pad.b); return; }
            ctx.strokeStyle = m.color; ctx.setLineDash([3, 3]); ctx.beginPath(); ctx.moveTo(X(m.at), pad.t); ctx.lineTo(X(m.at), h - pad.b); ctx.stroke(); ctx.setLineDash([]);
            const right = X(m.at) > w - pad.r - 80;
            ctx.fillStyle = m.color; ctx.textAlign = right ? "right" : "left"; ctx.fillText(m.label, X(m.at) + (right ? -2 : 2), pad.t + 10 + (m.row || 0) * 11);
          });
          series.forEach(s => {
            ctx.strokeStyle = s.color; ctx.lineWidth = 1.8; ctx.beginPath(); let pen = false;
            s.ys.forEach((v, i) => { if (v === null || v === undefined) { pen = false; return; } const x = X(xs[i]), y = Y(v); pen ? ctx.lineTo(x, y) : ctx.moveTo(x, y); pen = true; });
            ctx.stroke(); ctx.lineWidth = 1;
          });
          ctx.fillStyle = "#687083"; ctx.textAlign = "center";
          for (let i = 0; i <= 4; i++) { const x = x0 + (x1 - x0) * i / 4; ctx.textAlign = i === 0 ? "left" : i === 4 ? "right" : "center"; ctx.fillText(xFmt(x), X(x), h - pad.b + 14); }
          charts.drawn++;
        }
        function drawMOS(sel) {
          legend("mos-legend", [["p50", COLORS.p50], ["p5", COLORS.p5]]);
          lineChart(document.getElementById("mos"), sel.map(r => r[cols.bucket_ts]),
            [{color: COLORS.p50, ys: sel.map(r => r[cols.mos_p50])}, {color: COLORS.p5, ys: sel.map(r => r[cols.mos_p5])}],
            4.5, v => v.toFixed(1), shortTime, [], 3);
        }

        // ---- distributions
        function drawHistograms() {
          const box = document.getElementById("hists"); box.textContent = "";
          const days = D.histograms.days, dimIndex = D.dimensions.indexOf(state.dim);
          const valIndex = dimIndex < 0 ? 0 : (D.histograms.values[state.dim] || []).indexOf(state.val);
          const dayOk = days.map(d => d + 86400000 > state.from && d <= state.to + bucketMs - 1);
          D.histograms.metrics.forEach(m => {
            const counts = new Array(m.bins).fill(0);
            m.cells.forEach(([d, dim, v, bin, n]) => { if (dayOk[d] && dim === dimIndex && (dimIndex < 0 || v === valIndex)) counts[bin] += n; });
            const fig = el("figure"); const total = counts.reduce((a, b) => a + b, 0);
            fig.appendChild(el("figcaption", null, m.label + " (" + thousands(total) + " calls)"));
            const c = el("canvas"); c.width = 420; c.height = 180; fig.appendChild(c); box.appendChild(fig);
            const [ctx, w, h] = canvasCtx(c), pad = {l: 40, r: 8, t: 8, b: 22}, max = nice(Math.max(1, ...counts));
            axes(ctx, w, h, pad, max, count, 4);
            if (!total) { empty(ctx, w, h); return; }
            const bw = (w - pad.l - pad.r) / m.bins;
            counts.forEach((n, i) => { const hh = (h - pad.t - pad.b) * n / max; ctx.fillStyle = COLORS[m.name] || "#2b6cb0"; ctx.fillRect(pad.l + i * bw + 0.5, h - pad.b - hh, Math.max(1, bw - 1), hh); });
            ctx.fillStyle = "#687083"; ctx.textAlign = "center";
            for (let i = 0; i <= 4; i++) { const b = m.bins * i / 4; ctx.textAlign = i === 0 ? "left" : i === 4 ? "right" : "center"; ctx.fillText(+(m.low + b * m.width).toFixed(1) + (i === 4 ? "+" : ""), pad.l + bw * b, h - pad.b + 14); }
            charts.drawn++;
          });
        }

        // ---- breakdowns (rollups of one dimension over the time range)
        function drawBreakdowns() {
          const box = document.getElementById("breakdowns"); box.textContent = "";
          D.dimensions.forEach(dim => {
            const acc = new Map();
            rows.forEach(r => {
              if (r[cols.dimension] !== dim || !inRange(r[cols.bucket_ts])) return;
              const a = acc.get(r[cols.value]) || {calls: 0, answered: 0, bad: 0, mos: [0, 0], loss: [0, 0], rtt: [0, 0], setup: [0, 0]};
              a.calls += r[cols.calls]; a.answered += r[cols.calls] - r[cols.unanswered]; a.bad += r[cols.poor] + r[cols.no_media];
              for (const k of ["mos", "loss", "rtt", "setup"]) { const n = r[cols[k + "_n"]] || 0; if (n) { a[k][0] += n * r[cols[k + "_mean"]]; a[k][1] += n; } }
              acc.set(r[cols.value], a);
            });
            const fig = el("figure"); fig.appendChild(el("figcaption", null, "By " + dim.replace("_", " ")));
            const t = el("table"), head = el("tr");
            [["value", ""], ["calls", "num"], ["poor or no media", ""], ["MOS", "num"], ["loss %", "num"], ["RTT ms", "num"], ["setup ms", "num"]].forEach(([n, c]) => head.appendChild(el("th", c, n)));
            t.appendChild(head);
            [...acc.entries()].sort((a, b) => b[1].calls - a[1].calls).slice(0, 12).forEach(([v, a]) => {
              const tr = el("tr"), share = a.answered ? 100 * a.bad / a.answered : 0;
              tr.appendChild(el("td", null, v)); tr.appendChild(el("td", "num", thousands(a.calls)));
              const td = el("td"), bar = el("span", "bar"); bar.style.width = Math.round(share * 1.2) + "px"; td.appendChild(bar); td.appendChild(document.createTextNode(" " + share.toFixed(1) + "%")); tr.appendChild(td);
              const mean = k => a[k][1] ? a[k][0] / a[k][1] : null;
              tr.appendChild(el("td", "num", fmt(mean("mos"), 2))); tr.appendChild(el("td", "num", fmt(mean("loss"), 2)));
              tr.appendChild(el("td", "num", fmt(mean("rtt"), 0))); tr.appendChild(el("td", "num", fmt(mean("setup"), 0)));
              t.appendChild(tr);
            });
            fig.appendChild(t); box.appendChild(fig);
          });
        }

        // ---- worst calls and drill-down
        function drawWorst() {
          const t = document.getElementById("worst"), head = t.tHead, bodyEl = t.tBodies[0];
          head.textContent = ""; bodyEl.textContent = "";
          const hr = el("tr");
          [["started (UTC)", ""], ["call", ""], ["grade", ""], ["worst MOS", "num"], ["sent MOS", "num"], ["loss %", "num"], ["jitter ms", "num"], ["RTT ms", "num"], ["SDK score", "num"], ["network", ""], ["platform", ""], ["app", ""], ["findings and why", ""]].forEach(([n, c]) => hr.appendChild(el("th", c, n)));
          head.appendChild(hr);
          const list = D.worst.filter(w => w.start >= state.from && w.start < state.to + bucketMs && (state.dim === "all" || String(w[state.dim]) === state.val));
          list.forEach(w => {
            const tr = el("tr", drills.has(w.id) ? "pick" : null);
            tr.appendChild(el("td", null, iso(w.start))); const idCell = el("td", "id", w.id.length > 14 ? w.id.slice(0, 12) + "…" : w.id); idCell.title = w.id; tr.appendChild(idCell); tr.appendChild(el("td", null, w.grade.replace("_", " ")));
            tr.appendChild(el("td", "num", fmt(w.mos_worst, 2))); tr.appendChild(el("td", "num", fmt(w.mos_worst_sent, 2))); tr.appendChild(el("td", "num", fmt(w.loss, 2)));
            tr.appendChild(el("td", "num", fmt(w.jitter, 1))); tr.appendChild(el("td", "num", fmt(w.rtt, 0)));
            tr.appendChild(el("td", "num", w.sdk_score === null || w.sdk_score === undefined ? "–" : fmt(w.sdk_score, 0) + " (min " + fmt(w.sdk_score_min, 0) + ")"));
            tr.appendChild(el("td", null, w.network)); tr.appendChild(el("td", null, w.platform)); tr.appendChild(el("td", null, w.app_version));
            const f = el("td", "why"); [...new Map(w.findings.map(x => [x[0], x[1]])).entries()].forEach(([code, sev]) => f.appendChild(el("span", "chip " + sev, code)));
            f.appendChild(el("div", "note", w.reason));
            if (w.conversation !== null) f.appendChild(el("div", "note", "conversation " + w.conversation + " · " + w.legs + (w.legs === 1 ? " leg" : " legs")));
            tr.appendChild(f);
            if (drills.has(w.id)) tr.onclick = () => { document.querySelectorAll("#worst tr.sel").forEach(r => r.classList.remove("sel")); tr.classList.add("sel"); drawDrill(w); };
            bodyEl.appendChild(tr);
          });
          if (!list.length) { const tr = el("tr"); const td = el("td", "note", "No poor calls in this selection."); td.colSpan = 12; tr.appendChild(td); bodyEl.appendChild(tr); }
          return list;
        }
        function drawDrill(w) {
          const d = drills.get(w.id), box = document.getElementById("drill-charts"); box.textContent = "";
          document.getElementById("drill-title").textContent = w.id + " · started " + iso(w.start) + " UTC · " + w.grade.replace("_", " ") + " · " + w.reason;
          const t0 = w.start, sec = ms => ((ms - t0) / 1000).toFixed(0) + " s";
          const interesting = /callRinging|callAnswerReceived|iceConnected|iceDisconnected|ipChange|freeze|hold|reconnect|end/;
          const marks = []; let row = 0;
          d.events.forEach(([ts, kind, action, type]) => { const label = kind === "end" ? "end" : String(type || action); if (interesting.test(label) || kind === "end") marks.push({at: ts, label: label, color: "#1d2330", row: (row++) % 3}); });
          d.findings.forEach(([ts, dur, code, sev]) => { if (sev !== "info" && dur > 0) marks.push({at: ts, until: ts + dur, color: sev === "poor" ? "rgba(217,83,79,0.07)" : "rgba(227,167,47,0.07)"}); });
          marks.sort((a, b) => (a.until === undefined) - (b.until === undefined));
          const xsA = d.audio.map(r => r[0]), xsV = d.video.map(r => r[0]);
          const all = xsA.concat(xsV, d.events.map(e => e[0]));
          const lo = Math.min(...all), hi = Math.max(...all);
          const panels = [
            ["MOS-CQ (audio, per interval)", xsA, [{color: COLORS.mos, ys: d.audio.map(r => r[1])}], 4.5, v => v.toFixed(1), 3],
            ["Loss % (audio)", xsA, [{color: COLORS.loss, ys: d.audio.map(r => r[2])}], nice(Math.max(5, ...d.audio.map(r => r[2] || 0))), v => v.toFixed(1)],
            ["Jitter ms (audio)", xsA, [{color: COLORS.jitter, ys: d.audio.map(r => r[3])}], nice(Math.max(40, ...d.audio.map(r => r[3] || 0))), v => v.toFixed(0)],
            ["RTT ms", xsA, [{color: COLORS.rtt, ys: d.audio.map(r => r[4])}], nice(Math.max(200, ...d.audio.map(r => r[4] || 0))), v => v.toFixed(0)],
            ["Bitrate kbit/s (inbound audio)", xsA, [{color: COLORS.kbps, ys: d.audio.map(r => r[5])}], nice(Math.max(64, ...d.audio.map(r => r[5] || 0))), v => v.toFixed(0)],
          ];
          if (xsV.length) {
            panels.push(["Bitrate kbit/s (inbound video)", xsV, [{color: COLORS.kbps, ys: d.video.map(r => r[1])}], nice(Math.max(500, ...d.video.map(r => r[1] || 0))), v => v.toFixed(0)]);
            panels.push(["Frame rate fps (inbound video)", xsV, [{color: COLORS.fps, ys: d.video.map(r => r[2])}], 30, v => v.toFixed(0)]);
          }
          const grid = el("div", "grid2"); box.appendChild(grid);
          panels.forEach(([title, xs, series, yMax, yFmt, yTicks]) => {
            const fig = el("figure"); fig.appendChild(el("figcaption", null, title)); const c = el("canvas"); c.width = 640; c.height = 170; fig.appendChild(c); grid.appendChild(fig);
            const xsFull = [lo].concat(xs, [hi]), pad = s => [null].concat(s.ys, [null]);
            lineChart(c, xsFull, series.map(s => ({color: s.color, ys: pad(s)})), yMax, yFmt, sec, marks, yTicks);
          });
        }

        // ---- conferences: the worst listed, one drawn as participants × time
        // Drill-downs by conference id through a Map, as the calls' (ids are data).
        const conferenceDrills = new Map(Object.entries(D.conferences ? D.conferences.drill : {}));
        const CAUSES = [["U", "sender_uplink", "a sender's uplink", "#d9534f"], ["D", "receiver_downlink", "own downlink", "#6c4a9e"],
          ["B", "both", "both", "#8b1e3f"], ["S", "server_or_path", "server or path", "#2b6cb0"], ["?", "unknown", "unknown", "#9aa1ad"]];
        const causeName = letter => (CAUSES.find(c => c[0] === letter) || CAUSES[4])[2];
        const STATES = [["no data", "s0"], ["fine", "s1"], ["warn", "s2"], ["poor", "s3"]];
        const minutes = x => x === null || x === undefined ? "–" : String(+Number(x).toFixed(2));
        const clock = ms => new Date(ms).toISOString().slice(11, 19);
        function drawConferences() {
          if (!D.conferences) return [];
          const t = document.getElementById("conf-list"), head = t.tHead, bodyEl = t.tBodies[0];
          head.textContent = ""; bodyEl.textContent = "";
          const hr = el("tr");
          [["started (UTC)", ""], ["conference", ""], ["participants", "num"], ["poor participant-min", "num"], ["by uplinks min", "num"], ["by own downlinks min", "num"], ["poor stream-slots by cause", ""], ["worst uplink", ""]].forEach(([n, c]) => hr.appendChild(el("th", c, n)));
          head.appendChild(hr);
          const list = D.conferences.rows.filter(c => c.start >= state.from && c.start < state.to + bucketMs);
          list.forEach(c => {
            const tr = el("tr", "pick");
            tr.appendChild(el("td", null, iso(c.start)));
            const idCell = el("td", "id", c.id.length > 24 ? c.id.slice(0, 22) + "…" : c.id); idCell.title = c.id; tr.appendChild(idCell);
            tr.appendChild(el("td", "num", c.participants)); tr.appendChild(el("td", "num", minutes(c.poor_minutes)));
            tr.appendChild(el("td", "num", minutes(c.uplink_minutes))); tr.appendChild(el("td", "num", minutes(c.downlink_minutes)));
            const td = el("td"), bar = el("span", "causes"), poorSlots = CAUSES.reduce((s, k) => s + (c[k[1]] || 0), 0);
            CAUSES.forEach(([letter, key, name, color]) => { if (!c[key]) return; const i = el("i"); i.style.width = (100 * c[key] / poorSlots) + "%"; i.style.background = color; i.title = name + ": " + c[key]; bar.appendChild(i); });
            td.appendChild(bar);
            td.appendChild(document.createTextNode(" " + CAUSES.filter(k => c[k[1]]).map(k => k[0] + " " + c[k[1]]).join(" · ")));
            tr.appendChild(td); tr.appendChild(el("td", "worst-uplink", c.worst_uplink === null ? "–" : c.worst_uplink));
            tr.onclick = () => { document.querySelectorAll("#conf-list tr.sel").forEach(r => r.classList.remove("sel")); tr.classList.add("sel"); drawConferenceDrill(c); };
            bodyEl.appendChild(tr);
          });
          if (!list.length) { const tr = el("tr"); const td = el("td", "note", "No conferences in this time range."); td.colSpan = 8; tr.appendChild(td); bodyEl.appendChild(tr); }
          return list;
        }
        function drawConferenceDrill(c) {
          const d = conferenceDrills.get(c.id), box = document.getElementById("conf-matrix"), notes = document.getElementById("conf-offenders");
          box.textContent = ""; notes.textContent = "";
          document.getElementById("conf-title").textContent = c.id + " · started " + iso(c.start) + " UTC · " + c.participants + " participants · " + minutes(c.poor_minutes) + " poor participant-minutes";
          const lg = document.getElementById("conf-legend"); lg.textContent = "";
          STATES.forEach(([name, cls]) => { const s = el("span"); const i = el("i", cls); s.appendChild(i); s.appendChild(document.createTextNode(name)); lg.appendChild(s); });
          CAUSES.forEach(([letter, , name]) => lg.appendChild(el("span", null, letter + " " + name)));
          lg.appendChild(el("span", "note", "each cell: the worst stream the participant received in the slot; hover for the senders"));
          if (!d || !d.columns) { box.appendChild(el("p", "note", "No received stream of this conference has a slot of media.")); return; }
          // Cells as wide as the section allows (up to 40 px), so a short conference reads as well as a long one.
          const table = el("table", "matrix"), head = el("tr"), cell = Math.max(14, Math.min(40, Math.floor(960 / d.columns)));
          const step = Math.max(Math.ceil(56 / cell), Math.ceil(d.columns / 15));
          head.appendChild(el("th"));
          for (let col = 0; col < d.columns; col += step) {
            const s = (col * d.column_ms) / 1000, th = el("th", "t", Math.floor(s / 60) + ":" + String(Math.round(s % 60)).padStart(2, "0"));
            th.colSpan = Math.min(step, d.columns - col); head.appendChild(th);
          }
          table.appendChild(head);
          [...d.rows].sort((a, b) => a.name.localeCompare(b.name, "en", {numeric: true})).forEach(r => {
            const tr = el("tr"), who = el("th", "who", r.name), poor = new Map(r.poor.map(e => [e[0], e]));
            who.title = r.name; tr.appendChild(who);
            for (let col = 0; col < d.columns; col++) {
              const st = +(r.states[col] || 0), td = el("td", "s" + st), from = d.start + col * d.column_ms, p = poor.get(col);
              let tip = r.name + " · " + clock(from) + "–" + clock(from + d.column_ms) + " UTC · " + STATES[st][0];
              if (p) {
                td.textContent = p[1].slice(0, 2);
                tip += "\npoor streams from: " + p[2].map(([sender, kinds, causes]) => sender + " " + kinds + " (" + causes.split("").map(causeName).join(", ") + ")").join("; ") + (p[3] ? "; and " + p[3] + " more" : "");
              }
              td.title = tip; td.style.width = td.style.minWidth = cell + "px"; tr.appendChild(td);
            }
            table.appendChild(tr);
          });
          box.appendChild(table);
          d.offenders.forEach(([who, spoiled, affected, own]) => {
            if (spoiled > 0) notes.appendChild(el("p", "offender", who + "'s uplink spoiled " + minutes(spoiled) + " receiver-minutes for " + affected + (affected === 1 ? " participant" : " participants")));
            if (own > 0) notes.appendChild(el("p", "offender", who + "'s own downlink spoiled " + minutes(own) + " of its received minutes"));
          });
          if (!d.offenders.length) notes.appendChild(el("p", "note", "No participant's uplink or downlink spoiled a minute."));
          document.body.dataset.conferenceRows = d.rows.length;
        }

        function drawSummary(sel) {
          const box = document.getElementById("summary"); box.textContent = "";
          const sum = k => sel.reduce((s, r) => s + (r[cols[k]] || 0), 0);
          const calls = sum("calls"), answered = calls - sum("unanswered"), mosN = sum("mos_n");
          const mos = mosN ? sel.reduce((s, r) => s + (r[cols.mos_n] || 0) * (r[cols.mos_mean] || 0), 0) / mosN : null;
          [["calls", calls], ["answered", answered], ["good", sum("good")], ["fair", sum("fair")], ["poor", sum("poor")], ["no media", sum("no_media")], ["unmeasured", sum("unmeasured")],
           ["poor or no media", answered ? (100 * (sum("poor") + sum("no_media")) / answered).toFixed(1) + "%" : "–"], ["mean MOS-CQ", fmt(mos, 2)]]
            .forEach(([k, v]) => { const t = el("div", "tile"); t.dataset.key = k; t.appendChild(el("b", null, thousands(v))); t.appendChild(el("span", "note", k)); box.appendChild(t); });
        }

        function draw() {
          try {
            charts.drawn = 0;
            const sel = selected();
            drawSummary(sel); drawGrades(sel); drawMOS(sel); drawHistograms(); drawBreakdowns();
            const list = drawWorst();
            const first = list.find(w => drills.has(w.id));
            if (first) { drawDrill(first); const tr = [...document.querySelectorAll("#worst tr.pick")][0]; if (tr) tr.classList.add("sel"); }
            const conferences = drawConferences();
            if (conferences.length) { drawConferenceDrill(conferences[0]); document.querySelector("#conf-list tr.pick").classList.add("sel"); }
            document.getElementById("status").textContent = "charts drawn: " + charts.drawn + " · worst calls listed: " + list.length + (D.conferences ? " · conferences listed: " + conferences.length : "");
            if (document.body.dataset.rendered !== "error") document.body.dataset.rendered = "ok";
            document.body.dataset.charts = charts.drawn;
          } catch (e) { fail(e && e.stack || String(e)); }
        }

        // report.html#conferences shows the conferences alone (a link to them, or a screenshot).
        if (location.hash === "#conferences" && D.conferences) document.body.dataset.focus = "conferences";
        document.getElementById("meta").textContent = D.meta.db + " · " + thousands(D.meta.calls) + " calls" + (D.meta.first !== null ? " · " + iso(D.meta.first) + " to " + iso(D.meta.last) + " UTC" : "") + " · graded with " + D.meta.grading + " · generated " + iso(D.meta.generated) + " UTC";
        if (!D.meta.calls) { document.getElementById("summary").textContent = "This database holds no calls yet: run callstats analyze first."; document.body.dataset.rendered = "ok"; document.body.dataset.charts = 0; }
        else { setupFilters(); draw(); }
        """#
}
