// slateboard dashboard: plain JS, no build step, nothing loaded from elsewhere.
// Every value from the store is put in the page with textContent (never as HTML).
"use strict";

(function () {
  const TOKEN = new URLSearchParams(location.search).get("token");
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";

  const ui = {
    board: null,        // the board's header and blueprint summary (/api/boards/{id})
    records: [],        // every record so far, in seq order
    latest: 0,          // the latest version
    shown: null,        // the version the state panel shows
    boardStream: null,  // EventSource of the selected board
    listStream: null,   // EventSource of the board list
    stateRequest: 0,    // only the newest state request may paint
  };

  // -- plumbing -----------------------------------------------------------------------------
  function withToken(url) {
    if (!TOKEN) return url;
    return url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN);
  }

  async function api(path) {
    const headers = TOKEN ? { Authorization: "Bearer " + TOKEN } : {};
    const res = await fetch(path, { headers: headers, cache: "no-store" });
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (!res.ok) throw new Error((body && body.error) || res.status + " " + res.statusText);
    return body;
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of [].concat(children || [])) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message || "";
    box.hidden = !message;
  }

  function when(ts) {
    if (!ts) return "";
    const d = new Date(ts * 1000);
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  function setLive(on, text) {
    const live = $("live");
    live.classList.toggle("on", on);
    live.textContent = text;
  }

  // A cost in dollars as the CLI prints it; null is a model without a price: "unknown", never 0.
  function money(usd) {
    return usd === null || usd === undefined ? "unknown" : "$" + usd.toFixed(4);
  }

  // -- the board list -------------------------------------------------------------------------
  function renderBoards(boards) {
    const body = $("boards").tBodies[0];
    body.replaceChildren();
    const selected = ui.board ? ui.board.board_id : null;
    for (const b of boards) {
      const row = el("tr", {
        "data-board": b.board_id,
        class: b.board_id === selected ? "selected" : "",
        onclick: () => selectBoard(b.board_id),
      }, [
        el("td", { class: "mono", title: b.board_id, text: b.board_id.slice(0, 12) }),
        el("td", { text: b.name }),
        el("td", {}, badge(b)),
        el("td", { text: b.reason || "" }),
        el("td", { class: "num", text: String(b.version) }),
        el("td", { class: "num", text: String(b.records) }),
        el("td", { class: "num", "data-testid": "board-cost", text: money(b.cost_usd) }),
        el("td", { class: "muted", text: when(b.updated_at) }),
      ]);
      body.appendChild(row);
    }
    $("no-boards").hidden = boards.length > 0;
    $("boards-count").textContent = boards.length === 1 ? "1 board" : boards.length + " boards";
  }

  function followBoards() {
    if (ui.listStream) ui.listStream.close();
    const src = new EventSource(withToken("/api/events"));
    ui.listStream = src;
    src.onopen = () => setLive(true, "live");
    src.addEventListener("boards", (e) => renderBoards(JSON.parse(e.data).boards));
    src.onerror = () => setLive(false, "reconnecting…");
  }

  // -- one board ----------------------------------------------------------------------------
  async function selectBoard(id) {
    showError("");
    if (ui.boardStream) { ui.boardStream.close(); ui.boardStream = null; }
    let board;
    try {
      board = await api("/api/boards/" + encodeURIComponent(id));
    } catch (err) {
      showError(err.message);
      $("board").hidden = true;
      return;
    }
    if (location.hash !== "#board=" + id) history.replaceState(null, "", location.pathname + location.search + "#board=" + id);
    ui.board = board;
    ui.records = [];
    ui.latest = board.version;
    ui.shown = null;
    for (const row of $("boards").tBodies[0].rows) row.classList.toggle("selected", row.dataset.board === id);
    $("timeline").tBodies[0].replaceChildren();
    closeView();
    $("board").hidden = false;
    let after = 0;
    try {
      for (;;) {
        const page = await api(`/api/boards/${encodeURIComponent(id)}/records?after=${after}`);
        for (const rec of page.records) addRecord(rec, false);
        if (page.next_after === null || page.next_after === undefined) break;
        after = page.next_after;
      }
    } catch (err) {
      showError(err.message);
    }
    fillWorkerFilter();
    renderSummary();
    drawTokens();
    const slider = $("slider");
    slider.max = String(ui.latest);
    slider.value = String(ui.latest);
    $("follow").checked = true;
    await loadState(ui.latest);
    followBoard(id);
  }

  function followBoard(id) {
    const last = ui.records.length ? ui.records[ui.records.length - 1].seq : 0;
    const src = new EventSource(withToken(`/api/boards/${encodeURIComponent(id)}/events?after=${last}`));
    ui.boardStream = src;
    src.onopen = () => setLive(true, "live");
    src.onerror = () => setLive(false, "reconnecting…");
    src.addEventListener("record", (e) => {
      if (!ui.board || ui.board.board_id !== id) return;
      const rec = JSON.parse(e.data);
      if (ui.records.length && rec.seq <= ui.records[ui.records.length - 1].seq) return;
      addRecord(rec, true);
      fillWorkerFilter();
      renderSummary();
      drawTokens();
      const slider = $("slider");
      slider.max = String(ui.latest);
      if ($("follow").checked && rec.outcome === "accepted") {
        slider.value = String(ui.latest);
        loadState(ui.latest);
      } else {
        updateVersionLabel(Number(slider.value));
      }
    });
    src.addEventListener("board", (e) => {
      if (!ui.board || ui.board.board_id !== id) return;
      Object.assign(ui.board, JSON.parse(e.data));
      renderSummary();
    });
    src.addEventListener("gone", (e) => {
      showError(JSON.parse(e.data).error);
      src.close();
    });
  }

  function addRecord(rec, fresh) {
    ui.records.push(rec);
    if (rec.version > ui.latest) ui.latest = rec.version;
    if (ui.board && rec.seq > ui.board.records) ui.board.records = rec.seq;
    const row = timelineRow(rec);
    if (fresh) row.classList.add("flash");
    $("timeline").tBodies[0].appendChild(row);
    applyFilter(row);
    if (fresh) {
      const box = $("timeline").closest(".scroll");
      box.scrollTop = box.scrollHeight;
    }
  }

  function counts() {
    const out = {};
    for (const r of ui.records) out[r.outcome] = (out[r.outcome] || 0) + 1;
    return out;
  }

  // One mapping (slateboard.status.end_status, computed by the server): solved, exhausted,
  // failed, paused, interrupted or running; the stored lifecycle status is the tooltip.
  function badge(b, testid) {
    const shown = b.end_status || b.status;
    const attrs = { class: "badge " + shown, text: shown, title: "status: " + b.status };
    if (testid) attrs["data-testid"] = testid;
    return el("span", attrs);
  }

  // Whether the board's log matches its signed checkpoints (served with --anchor); nothing
  // is shown when the dashboard has no anchor file.
  function anchorBadge(a) {
    if (!a) return null;
    const text = a.ok ? "anchored @" + a.seq : a.checkpoints ? "anchor mismatch" : "not anchored";
    return el("span", { class: "badge " + (a.ok ? "done" : "failed"), "data-testid": "board-anchor",
                        title: a.problem || "", text: text });
  }

  // Where the board was forked from, and the boards forked from it (slateboard fork): links
  // that open those boards; nothing for a board with neither.
  function boardLink(id, label, testid, title) {
    return el("a", { href: "#board=" + encodeURIComponent(id), class: "mono", "data-testid": testid,
      "data-board": id, text: label, title: title || id, onclick: (e) => { e.preventDefault(); selectBoard(id); } });
  }

  function lineageLine(l) {
    if (!l || (!l.parent && !(l.children || []).length)) return null;
    const link = boardLink;
    const parts = [];
    if (l.parent) {
      const p = l.parent;
      parts.push("forked from ");
      parts.push(p.exists ? link(p.board_id, p.name || p.board_id.slice(0, 8), "lineage-parent")
                          : el("span", { class: "mono", "data-testid": "lineage-parent", text: p.board_id + " (gone)" }));
      parts.push(" at version " + p.version);
    }
    const kids = l.children || [];
    if (kids.length) {
      parts.push((parts.length ? "; " : "") + (kids.length === 1 ? "1 fork: " : kids.length + " forks: "));
      kids.forEach((c, i) => {
        if (i) parts.push(", ");
        parts.push(link(c.board_id, c.board_id.slice(0, 8) + " @" + c.version_forked, "lineage-child"));
      });
    }
    return el("span", { class: "kv lineage", "data-testid": "board-lineage" }, parts);
  }

  const SUBBOARD_LINKS = 50; // a fan-out over thousands of items: the first links, then a count
  // Sub-boards (runtime.subboards): the parent board a child was run by (worker, item, the
  // invocation) and the child boards a parent ran, each a link with its status and item index.
  function subboardsLine(s) {
    if (!s || (!s.parent && !(s.children || []).length)) return null;
    const parts = [];
    if (s.parent) {
      const p = s.parent;
      parts.push("sub-board of ");
      parts.push(p.exists ? boardLink(p.board_id, p.name || p.board_id.slice(0, 8), "subboard-parent")
                          : el("span", { class: "mono", "data-testid": "subboard-parent", text: p.board_id + " (gone)" }));
      parts.push(el("span", { "data-testid": "subboard-item", title: "invocation " + p.invocation,
        text: ` (${p.worker || "?"}, item ${p.index}, invocation ${String(p.invocation || "?").slice(0, 8)})` }));
    }
    const kids = s.children || [];
    if (kids.length) {
      parts.push((parts.length ? "; " : "") + (kids.length === 1 ? "1 sub-board: " : kids.length + " sub-boards: "));
      kids.slice(0, SUBBOARD_LINKS).forEach((c, i) => {
        if (i) parts.push(" ");
        const shown = c.end_status || c.status;
        const a = boardLink(c.board_id, "#" + c.index + " " + shown, "subboard-child",
                            `${c.board_id} · ${c.worker} item ${c.index} · invocation ${c.invocation}`);
        a.dataset.index = String(c.index);
        a.dataset.status = shown;
        parts.push(a);
      });
      if (kids.length > SUBBOARD_LINKS) parts.push(` and ${kids.length - SUBBOARD_LINKS} more (in the board's API JSON)`);
    }
    return el("span", { class: "kv lineage", "data-testid": "board-subboards" }, parts);
  }

  function renderSummary() {
    const b = ui.board;
    const box = $("summary");
    const c = counts();
    const tokens = ui.records.reduce((n, r) => n + r.tokens, 0);
    const kv = (k, v, testid) => el("span", { class: "kv", "data-testid": testid }, [k + " ", el("b", { text: String(v) })]);
    const parts = [
      el("span", { class: "title", text: b.name || "(unnamed)" }),
      el("span", { class: "mono muted", text: b.board_id }),
      badge(b, "board-status"),
      b.reason ? el("span", { class: "muted", text: b.reason }) : null,
      anchorBadge(b.anchor),
      lineageLine(b.lineage),
      subboardsLine(b.subboards),
      kv("version", ui.latest, "summary-version"),
      kv("records", ui.records.length, "summary-records"),
      kv("accepted", c.accepted || 0),
      kv("rejected", c.rejected || 0, "summary-rejected"),
      c.noop ? kv("no-op", c.noop) : null,
      c.held ? kv("held", c.held) : null,
      kv("tokens", tokens, "summary-tokens"),
      kv("cost", money(ui.records.reduce((n, r) => (n === null || r.cost_usd === null ? null : n + r.cost_usd), 0)), "summary-cost"),
    ];
    box.replaceChildren(...parts.filter((p) => p !== null));
  }

  // -- the timeline ---------------------------------------------------------------------------
  function timelineRow(rec) {
    const outcome = rec.outcome;
    let patchCell = "";
    if (rec.patch !== null && rec.patch !== undefined && rec.patch !== "") {
      let pretty = rec.patch;
      let label = "patch";
      try {
        const ops = JSON.parse(rec.patch);
        pretty = JSON.stringify(ops, null, 2);
        if (Array.isArray(ops)) label = ops.length === 1 ? ops[0].op + " " + ops[0].path : ops.length + " ops";
      } catch (e) { label = "raw text"; }
      patchCell = el("details", {}, [el("summary", { text: label }), el("pre", { text: pretty })]);
    }
    const usage = rec.usage || {};
    const viewCell = rec.view_hash
      ? el("button", {
          type: "button", class: "link mono", title: "view " + rec.view_hash,
          "data-testid": "view-button", onclick: () => openView(rec),
        }, rec.view_hash.slice(0, 8))
      : "";
    const versionCell = el("button", {
      type: "button", class: "link", title: "show the state at this version",
      onclick: () => goToVersion(rec.version),
    }, String(rec.version));
    return el("tr", {
      class: "timeline-row " + outcome,
      "data-seq": rec.seq, "data-outcome": outcome, "data-worker": rec.worker || "",
    }, [
      el("td", { class: "num", text: String(rec.seq) }),
      el("td", { text: rec.kind }),
      el("td", { text: rec.worker || "–" }),
      el("td", {}, el("span", { class: "badge " + outcome, text: outcome })),
      el("td", { class: "stage", text: rec.stage || "" }),
      el("td", { class: "reason", text: rec.reason || "" }),
      el("td", { class: "num" }, versionCell),
      el("td", { class: "num", title: `in ${usage.tokens_in || 0}, out ${usage.tokens_out || 0}`, text: String(rec.tokens) }),
      el("td", { class: "num cost", text: rec.tokens ? money(rec.cost_usd) : "" }),
      el("td", {}, patchCell),
      el("td", {}, viewCell),
    ]);
  }

  function fillWorkerFilter() {
    const select = $("filter-worker");
    const have = new Set(Array.from(select.options).map((o) => o.value));
    for (const r of ui.records) {
      if (r.worker && !have.has(r.worker)) {
        select.appendChild(el("option", { value: r.worker, text: r.worker }));
        have.add(r.worker);
      }
    }
  }

  function applyFilter(row) {
    const outcome = $("filter-outcome").value;
    const worker = $("filter-worker").value;
    row.hidden = (outcome && row.dataset.outcome !== outcome) || (worker && row.dataset.worker !== worker);
  }

  function applyFilters() {
    for (const row of $("timeline").tBodies[0].rows) applyFilter(row);
  }

  // -- time travel ----------------------------------------------------------------------------
  function goToVersion(v) {
    const slider = $("slider");
    slider.value = String(v);
    $("follow").checked = v >= ui.latest;
    loadState(v);
    $("state-panel").scrollIntoView({ block: "nearest" });
  }

  function updateVersionLabel(v) {
    $("version-label").textContent = `version ${v} of ${ui.latest}`;
  }

  async function loadState(v) {
    if (!ui.board) return;
    const ticket = ++ui.stateRequest;
    updateVersionLabel(v);
    let data;
    try {
      data = await api(`/api/boards/${encodeURIComponent(ui.board.board_id)}/state?version=${v}`);
    } catch (err) {
      if (ticket === ui.stateRequest) showError(err.message);
      return;
    }
    if (ticket !== ui.stateRequest) return;
    ui.shown = data.version;
    const rec = data.record;
    $("state-meta").textContent =
      `state ${data.state_hash.slice(0, 12)} · replayed ${data.seq} record${data.seq === 1 ? "" : "s"}` +
      (rec ? ` · made by record ${rec.seq} (${rec.worker || rec.kind})` : " · the initial state");
    for (const row of $("timeline").tBodies[0].rows) row.classList.toggle("current", !!rec && row.dataset.seq === String(rec.seq));
    const tree = $("state-tree");
    tree.dataset.version = String(data.version);
    tree.replaceChildren(renderTree(data.state, "", new Set(data.changed || []), 0, undefined, "state"));
  }

  // -- JSON trees -----------------------------------------------------------------------------
  function leafValue(value) {
    const type = value === null ? "null" : typeof value;
    return el("span", { class: "v-" + type, text: JSON.stringify(value) });
  }

  function renderTree(value, pointer, changed, depth, label, rootName) {
    const isChanged = changed.has(pointer);
    const key = label === undefined ? null : el("span", { class: "key", text: label });
    if (value !== null && typeof value === "object") {
      const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.keys(value).sort().map((k) => [k, value[k]]);
      const opened = depth < 3 || Array.from(changed).some((p) => p.startsWith(pointer + "/"));
      const brackets = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
      const node = el("details", { open: opened, "data-pointer": pointer, class: isChanged ? "changed" : "" }, [
        el("summary", {}, [key, key ? ": " : "", el("span", { class: "count", text: rootName ? rootName + " " + brackets : brackets })]),
      ]);
      for (const [k, v] of entries) {
        const child = pointer + "/" + k.replace(/~/g, "~0").replace(/\//g, "~1");
        node.appendChild(renderTree(v, child, changed, depth + 1, k));
      }
      return node;
    }
    return el("div", { class: "leaf" + (isChanged ? " changed" : ""), "data-pointer": pointer }, [key, key ? ": " : "", leafValue(value)]);
  }

  // -- views ----------------------------------------------------------------------------------
  function closeView() {
    $("view-body").replaceChildren("Pick ", el("b", { text: "view" }), " on a record of the timeline to rebuild what its worker saw.");
    $("view-body").className = "muted small";
    $("view-close").hidden = true;
  }

  async function openView(rec) {
    const body = $("view-body");
    body.className = "small";
    body.replaceChildren(el("span", { class: "muted", text: "rebuilding the view…" }));
    $("view-close").hidden = false;
    let data;
    try {
      data = await api(`/api/boards/${encodeURIComponent(ui.board.board_id)}/views/${rec.view_hash}?seq=${rec.seq}`);
    } catch (err) {
      body.replaceChildren(el("span", { class: "view-bad", text: err.message }));
      return;
    }
    const parts = [
      el("div", {}, [`record ${data.seq}, worker `, el("b", { text: data.worker || "–" }), ` at version ${data.version}`]),
      el("div", { class: "mono muted", text: "logged view hash " + data.hash }),
    ];
    if (data.view) {
      parts.push(el("div", {
        class: data.matches ? "view-ok" : "view-bad", "data-testid": "view-match",
        text: data.matches
          ? "✓ rebuilt from the blueprint and the state at version " + data.version + ": its hash matches the log"
          : "✗ " + (data.problem || "the rebuilt view differs from the logged one"),
      }));
      const v = data.view;
      parts.push(el("div", { class: "muted", text: `size ${v.size} of budget ${v.budget} characters, level ${v.level}` }));
      parts.push(el("h3", { text: "data" }));
      const tree = el("div", { class: "tree" });
      for (const [ptr, value] of Object.entries(v.data)) tree.appendChild(renderTree(value, ptr, new Set(), 1, ptr));
      parts.push(tree);
      for (const [name, value] of [["event", v.event], ["writable", v.writable], ["rejections shown", v.rejections], ["handles", v.handles], ["notes", v.notes]]) {
        if (value === null || value === undefined || (Array.isArray(value) && value.length === 0)) continue;
        parts.push(el("h3", { text: name }));
        parts.push(el("div", { class: "tree" }, renderTree(value, "", new Set(), 1, undefined, name)));
      }
    } else {
      parts.push(el("div", { class: "view-bad", "data-testid": "view-match", text: "✗ " + data.problem }));
    }
    body.replaceChildren(...parts);
  }

  // -- the token chart ------------------------------------------------------------------------
  function usageBy(key) {
    // The same rule as slateboard.runtime.result.usage_by.
    const out = new Map();
    for (const r of ui.records) {
      if (key === "worker" && r.kind !== "proposal") continue;
      const u = r.usage || {};
      if (r.kind !== "proposal" && !u.tokens_in && !u.tokens_out) continue;
      const name = key === "worker" ? (r.worker || "-") : (u.component || "worker");
      const cur = out.get(name) || { in: 0, out: 0, calls: 0 };
      cur.in += u.tokens_in || 0;
      cur.out += u.tokens_out || 0;
      cur.calls += 1;
      out.set(name, cur);
    }
    return Array.from(out.entries()).sort((a, b) => a[0].localeCompare(b[0]));
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function drawTokens() {
    const groups = [["per worker", usageBy("worker")], ["per component", usageBy("component")]];
    const box = $("tokens-chart");
    const rows = groups.reduce((n, g) => n + Math.max(1, g[1].length) + 1, 0);
    const width = 520, labelW = 120, totalW = 110, rowH = 22;
    const height = rows * rowH + 6;
    const max = Math.max(1, ...groups.flatMap((g) => g[1].map(([, u]) => u.in + u.out)));
    const scale = (width - labelW - totalW) / max;
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "tokens per worker and per component", "data-testid": "tokens-svg" });
    let y = 4;
    for (const [title, entries] of groups) {
      chart.appendChild(svg("text", { x: 0, y: y + 14, class: "group" }, title));
      y += rowH;
      if (!entries.length) {
        chart.appendChild(svg("text", { x: labelW, y: y + 14, class: "total" }, "no tokens logged"));
        y += rowH;
      }
      for (const [name, u] of entries) {
        const label = name.length > 16 ? name.slice(0, 15) + "…" : name;
        chart.appendChild(svg("text", { x: 8, y: y + 14 }, label));
        const wIn = u.in * scale, wOut = u.out * scale;
        const barIn = svg("rect", { x: labelW, y: y + 3, width: wIn.toFixed(1), height: rowH - 8, class: "bar-in", "data-name": name, "data-kind": "in" });
        barIn.appendChild(svg("title", {}, `${name}: ${u.in} tokens in`));
        const barOut = svg("rect", { x: (labelW + wIn).toFixed(1), y: y + 3, width: wOut.toFixed(1), height: rowH - 8, class: "bar-out", "data-name": name, "data-kind": "out" });
        barOut.appendChild(svg("title", {}, `${name}: ${u.out} tokens out`));
        chart.appendChild(barIn);
        chart.appendChild(barOut);
        chart.appendChild(svg("text", { x: labelW + wIn + wOut + 6, y: y + 14, class: "total" }, `${u.in + u.out} (${u.calls} call${u.calls === 1 ? "" : "s"})`));
        y += rowH;
      }
    }
    box.replaceChildren(chart);
  }

  // -- start ----------------------------------------------------------------------------------
  async function start() {
    $("slider").addEventListener("input", () => {
      const v = Number($("slider").value);
      $("follow").checked = v >= ui.latest;
      updateVersionLabel(v);
      clearTimeout(ui.sliderTimer);
      ui.sliderTimer = setTimeout(() => loadState(v), 80);
    });
    $("follow").addEventListener("change", () => {
      if ($("follow").checked) goToVersion(ui.latest);
    });
    $("filter-outcome").addEventListener("change", applyFilters);
    $("filter-worker").addEventListener("change", applyFilters);
    $("view-close").addEventListener("click", closeView);
    try {
      const info = await api("/api/info");
      $("store-label").textContent = info.store + " · slateboard " + info.version;
      renderBoards((await api("/api/boards")).boards);
    } catch (err) {
      showError(err.message);
      return;
    }
    followBoards();
    const wanted = /^#board=(.+)$/.exec(location.hash);
    if (wanted) selectBoard(decodeURIComponent(wanted[1]));
  }

  start();
})();
