// The dialogue browser. Recorded text is only ever put on the page with textContent or as a
// <select> option's text; no HTML is built from data.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const dialogues = data.dialogues;
  const titles = data.titles || {};
  const several = data.runs.length > 1;
  const PAGE = 200;
  let shownLimit = PAGE;
  let openKey = null;

  function el(tag, props, children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (key === "text") node.textContent = value;
        else if (key === "className") node.className = value;
        else node.setAttribute(key, value);
      }
    }
    for (const child of children || []) if (child) node.appendChild(child);
    return node;
  }

  function optionChip(option) {
    const payload = option.payload === null || option.payload === undefined ? null : option.payload;
    const chip = el("span", { className: "option", text: option.label });
    if (payload !== null) {
      chip.appendChild(el("span", { className: "payload", text: " → " + payload }));
    }
    return chip;
  }

  function fillSelect(select, values, allLabel) {
    select.appendChild(el("option", { value: "", text: allLabel }));
    for (const value of values) select.appendChild(el("option", { value: value, text: value }));
  }

  function distinct(key) {
    return Array.from(new Set(dialogues.map((d) => d[key]))).sort();
  }

  const filters = {
    run: document.getElementById("filter-run"),
    crs: document.getElementById("filter-crs"),
    simulator: document.getElementById("filter-simulator"),
    termination: document.getElementById("filter-termination"),
  };
  const metricSelect = document.getElementById("filter-metric");
  const minInput = document.getElementById("filter-min");
  const maxInput = document.getElementById("filter-max");
  fillSelect(filters.run, data.runs, "all runs");
  fillSelect(filters.crs, distinct("crs"), "all CRSs");
  fillSelect(filters.simulator, distinct("simulator"), "all simulators");
  fillSelect(filters.termination, distinct("termination"), "all");
  for (const metric of data.metrics) metricSelect.appendChild(el("option", { value: metric, text: metric }));

  function number(input) {
    const value = input.value.trim();
    return value === "" ? null : Number(value);
  }

  function matches(d) {
    for (const [key, select] of Object.entries(filters)) {
      if (select.value !== "" && d[key] !== select.value) return false;
    }
    const low = number(minInput);
    const high = number(maxInput);
    if (low !== null || high !== null) {
      const value = d.scores[metricSelect.value];
      if (value === undefined || value === null) return false;
      if (low !== null && value < low) return false;
      if (high !== null && value > high) return false;
    }
    return true;
  }

  function formatScore(value) {
    if (value === undefined) return "";
    if (value === null) return "n/a";
    return Number.isInteger(value) ? String(value) : value.toFixed(3);
  }

  const head = document.getElementById("dialogue-head");
  const rows = document.getElementById("dialogue-rows");
  const more = document.getElementById("more");

  function renderHead() {
    head.replaceChildren();
    const names = [several ? "run" : null, "dialogue", "CRS", "simulator", "end", "turns", metricSelect.value || "score"];
    for (const name of names) if (name !== null) head.appendChild(el("th", { text: name }));
  }

  function keyOf(d) {
    return d.run + "\u0000" + d.id;
  }

  function render() {
    renderHead();
    const found = dialogues.filter(matches);
    document.getElementById("count").textContent = found.length + " of " + dialogues.length + " dialogues";
    rows.replaceChildren();
    for (const d of found.slice(0, shownLimit)) {
      const cells = [several ? d.run : null, d.id, d.crs, d.simulator, d.termination, String(d.turns), formatScore(d.scores[metricSelect.value])];
      const row = el("tr", { className: "dialogue-row" + (keyOf(d) === openKey ? " open" : "") });
      cells.forEach((text, index) => {
        if (text !== null) row.appendChild(el("td", { text: text, className: index === 1 ? "id" : index >= 5 ? "num" : "" }));
      });
      row.addEventListener("click", () => open(d, row));
      rows.appendChild(row);
    }
    more.hidden = found.length <= shownLimit;
  }

  function itemList(ids) {
    return el("ol", { className: "items" }, ids.map((id) => el("li", { text: titles[id] ? titles[id] + " · id " + id : "id " + id })));
  }

  function valueNode(value) {
    if (value !== null && typeof value === "object") return el("pre", { text: JSON.stringify(value, null, 2) });
    return el("span", { text: String(value) });
  }

  function keyValues(object) {
    const list = el("dl", { className: "kv" });
    for (const [key, value] of Object.entries(object)) {
      list.appendChild(el("dt", { text: key }));
      list.appendChild(el("dd", {}, [valueNode(value)]));
    }
    return list;
  }

  function explanation(e) {
    const head = e.metric + (e.turn ? " · turn " + e.turn : "") + ": " + formatScore(e.value);
    return el("div", { className: "expl" }, [
      el("strong", { text: head }),
      e.explanation ? el("div", { text: e.explanation }) : null,
      e.error ? el("div", { className: "error", text: e.error }) : null,
    ]);
  }

  function facts(pairs) {
    const list = el("dl", { className: "facts" });
    for (const [key, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      list.appendChild(el("dt", { text: key }));
      list.appendChild(el("dd", {}, [valueNode(value)]));
    }
    return list;
  }

  function open(d, row) {
    openKey = keyOf(d);
    for (const other of rows.querySelectorAll("tr.open")) other.classList.remove("open");
    if (row) row.classList.add("open");
    const detail = document.getElementById("detail");
    detail.replaceChildren();
    detail.appendChild(el("h3", { text: d.id }));
    detail.appendChild(
      facts([
        ["run", several ? d.run : null],
        ["CRS", d.crs],
        ["simulator", d.simulator],
        ["user", d.user],
        ["termination", d.termination_detail ? d.termination + " (" + d.termination_detail + ")" : d.termination],
        ["error", d.error ? d.error.source + ": " + d.error.type + ": " + d.error.message : null],
        ["turns", String(d.turns)],
      ])
    );
    const scores = Object.entries(d.scores);
    if (scores.length) {
      detail.appendChild(el("h4", { text: "Scores" }));
      detail.appendChild(facts(scores.map(([k, v]) => [k, formatScore(v)])));
    }
    const dialogueLevel = d.explanations.filter((e) => !e.turn);
    for (const e of dialogueLevel) detail.appendChild(explanation(e));
    if (d.need) {
      const need = el("details", {}, [el("summary", { text: "information need" }), valueNode(d.need)]);
      if (d.need.targets && d.need.targets.length) need.appendChild(el("div", { className: "meta", text: "targets:" }));
      if (d.need.targets && d.need.targets.length) need.appendChild(itemList(d.need.targets));
      detail.appendChild(need);
    }
    if (d.profile) detail.appendChild(el("details", {}, [el("summary", { text: "user profile" }), valueNode(d.profile)]));
    if (d.metadata && Object.keys(d.metadata).length) {
      detail.appendChild(el("details", {}, [el("summary", { text: "metadata" }), keyValues(d.metadata)]));
    }
    if (d.llm_usage && Object.keys(d.llm_usage).length) {
      detail.appendChild(el("details", {}, [el("summary", { text: "LLM usage" }), keyValues(d.llm_usage)]));
    }
    // Turn of each utterance (a CRS opening belongs to turn 1), so turn-level judge explanations can
    // follow the last utterance of the turn they judge.
    let turn = 0;
    const turns = d.utterances.map((u) => (u.role === "user" ? ++turn : Math.max(turn, 1)));
    const lastOfTurn = new Map(turns.map((t, index) => [t, index]));
    const placed = new Set();
    d.utterances.forEach((u, index) => {
      const box = el("div", { className: "utt " + u.role }, [
        el("div", { className: "who", text: u.role + " · turn " + turns[index] }),
        el("div", { className: "text", text: u.text }),
      ]);
      if (u.options && u.options.length) {
        // buttons the CRS offered: labels and payloads are text from the CRS, set as text only
        box.appendChild(el("div", { className: "meta", text: "options" }));
        box.appendChild(el("div", { className: "options" }, u.options.map(optionChip)));
      }
      if (u.chosen) {
        box.appendChild(el("div", { className: "meta" }, [el("span", { text: "picked option " }), optionChip(u.chosen)]));
      }
      if (u.acts) box.appendChild(el("div", { className: "meta" }, [el("span", { text: "acts " }), el("code", { className: "acts", text: u.acts })]));
      if (u.recommended.length) {
        box.appendChild(el("div", { className: "meta", text: "recommended" }));
        box.appendChild(itemList(u.recommended));
      }
      if (u.mentioned && u.mentioned.length) {
        box.appendChild(el("div", { className: "meta", text: "mentioned, not recommended" }));
        box.appendChild(itemList(u.mentioned));
      }
      if (u.shown.length) {
        box.appendChild(el("div", { className: "meta", text: "shown" }));
        box.appendChild(itemList(u.shown));
      }
      if (u.llm_calls) box.appendChild(el("div", { className: "meta", text: u.llm_calls + " LLM call(s)" }));
      if (Object.keys(u.annotations).length) box.appendChild(keyValues(u.annotations));
      detail.appendChild(box);
      if (lastOfTurn.get(turns[index]) === index) {
        for (const e of d.explanations) {
          if (e.turn === turns[index]) {
            detail.appendChild(explanation(e));
            placed.add(e);
          }
        }
      }
    });
    for (const e of d.explanations) if (e.turn && !placed.has(e)) detail.appendChild(explanation(e));
  }

  for (const control of [...Object.values(filters), metricSelect]) {
    control.addEventListener("change", () => {
      shownLimit = PAGE;
      render();
    });
  }
  for (const input of [minInput, maxInput]) {
    input.addEventListener("input", () => {
      shownLimit = PAGE;
      render();
    });
  }
  document.getElementById("filter-reset").addEventListener("click", () => {
    for (const select of Object.values(filters)) select.value = "";
    minInput.value = "";
    maxInput.value = "";
    shownLimit = PAGE;
    render();
  });
  more.addEventListener("click", () => {
    shownLimit += PAGE;
    render();
  });
  render();
})();
