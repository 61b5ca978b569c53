// The evaluation page: every report.json under the evaluation directory, as tables and figures.
(() => {
  "use strict";
  const TOKEN = new URLSearchParams(location.search).get("token");
  const withToken = (url) => (TOKEN ? url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN) : url);
  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  };
  const fmt = (iv, digits) => {
    if (!iv || iv.value === null || iv.value === undefined) return "-";
    const f = (x) => Number(x).toLocaleString(undefined, { maximumFractionDigits: digits, minimumFractionDigits: digits });
    return iv.low === null ? f(iv.value) : `${f(iv.value)} [${f(iv.low)}, ${f(iv.high)}]`;
  };
  // a row played with the erring model (--errors) names its error rate with its setting
  const setting = (row) => (row.error_rate ? `${row.setting} p=${row.error_rate}` : row.setting);
  const table = (heads, rows) => {
    const t = el("table", { class: "records" });
    t.append(el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", { text: h })))));
    const body = el("tbody");
    for (const r of rows) body.append(el("tr", {}, ...r.map((c) => el("td", { text: String(c) }))));
    t.append(body);
    return t;
  };
  const render = (data) => {
    document.getElementById("eval-dir").textContent = data.directory;
    const root = document.getElementById("reports");
    root.replaceChildren();
    if (!data.reports.length) {
      root.append(el("p", { class: "muted", text: "No report yet: run slateboard eval twx|scienceworld --out DIR under this directory." }));
      return;
    }
    for (const rep of data.reports) {
      const section = el("section", { class: "panel", "data-testid": "report" });
      const meta = Object.entries(rep.meta || {}).map(([k, v]) => `${k} ${v}`).join(", ");
      section.append(el("h2", { text: `${rep.name} (${rep.episodes} episodes${meta ? ", " + meta : ""})` }));
      section.append(table(
        ["suite", "system", "setting", "wins", "success (Wilson 95%)", "steps", "tokens/success (bootstrap 95%)", "unverified"],
        rep.systems.map((s) => [s.suite, s.system, setting(s), `${s.wins}/${s.games}`, fmt(s.success, 2), fmt(s.steps, 1), fmt(s.tokens_per_success, 0), s.unverified]),
      ));
      if (rep.comparisons.length) {
        section.append(el("h3", { text: "paired against slateboard / full" }));
        section.append(table(
          ["suite", "system", "setting", "pairs", "success delta", "steps delta", "tokens/success ratio"],
          rep.comparisons.map((c) => [c.suite, c.system, setting(c), c.pairs, fmt(c.success_delta, 2), fmt(c.steps_delta, 1), fmt(c.tokens_per_success_ratio, 2)]),
        ));
      }
      for (const fig of rep.figures) {
        const src = withToken(`/api/evaluation/${encodeURIComponent(rep.name)}/figures/${encodeURIComponent(fig)}`);
        section.append(el("img", { src, alt: fig, "data-testid": "figure", class: "eval-figure" }));
      }
      root.append(section);
    }
  };
  fetch(withToken("/api/evaluation"))
    .then((r) => r.json())
    .then(render)
    .catch((e) => { document.getElementById("reports").textContent = "could not load the reports: " + e; });
})();
