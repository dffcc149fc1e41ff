// The table's display: draws each snapshot the service sends (/events, server-sent events).
// Plain JavaScript, no build step, nothing loaded from elsewhere. The page keeps no state of
// its own beyond the last snapshot: after any reconnection the next message redraws it all.
"use strict";

const $ = (id) => document.getElementById(id);
const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
const DIE = ["", "⚀", "⚁", "⚂", "⚃", "⚄", "⚅"];
const SECTIONS = {
  baccarat: "shoe-game", "dragon-tiger": "shoe-game", roulette: "roulette",
  sicbo: "sicbo", paigow: "paigow", blackjack: "blackjack",
};
let snap = null;
let skew = 0; // the service's clock minus ours, ms: the countdown runs on the table's time

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function fill(parent, children) {
  parent.replaceChildren(...children);
}

function card(c) {
  if (c === "hole" || c === null) {
    const b = el("span", "card back", "··");
    b.dataset.card = "hole";
    return b;
  }
  const rank = c[0] === "T" ? "10" : c[0];
  const suit = c[1];
  const e = el("span", "card" + (suit === "H" || suit === "D" ? " red" : ""), rank + (SUITS[suit] || suit));
  e.dataset.card = c;
  return e;
}

function cell(cls, col, row, text) {
  const e = el("div", "cell " + cls, text);
  e.style.gridColumn = String(col + 1);
  e.style.gridRow = String(row + 1);
  e.dataset.c = col;
  e.dataset.r = row;
  return e;
}

// -- baccarat and Dragon Tiger ------------------------------------------------------------

const LETTER = { banker: "B", player: "P", dragon: "D", tiger: "T" };

function road(id, cells, make) {
  const inner = el("div", "inner");
  fill(inner, cells.map(make));
  const box = $(id);
  fill(box, [inner]);
  box.scrollLeft = box.scrollWidth; // the newest columns are the ones in view
}

function drawRoads(s) {
  const r = s.roads;
  const tie = s.game === "dragon-tiger" ? "=" : "T";
  road("bead_plate", r.bead_plate, ([c, w, winner]) => {
    const e = cell("bead " + winner, c, w, winner === "tie" ? tie : LETTER[winner]);
    e.dataset.winner = winner;
    return e;
  });
  road("big_road", r.big_road, ([c, w, side, ties]) => {
    const e = cell("ring " + (side || "none"), c, w, "");
    e.dataset.side = side === null ? "" : side;
    e.dataset.ties = ties;
    if (ties > 0) e.append(el("span", "ties", ties > 1 ? ties : "/"));
    return e;
  });
  for (const name of ["big_eye_boy", "small_road", "cockroach_pig"]) {
    road(name, r[name], ([c, w, colour]) => {
      const e = cell("dot " + colour, c, w, "");
      e.dataset.colour = colour;
      return e;
    });
  }
  const rows = [];
  for (const [side, marks] of Object.entries(r.next || {})) {
    const tr = el("tr");
    tr.dataset.side = side;
    tr.append(el("td", "", side));
    for (const name of ["big_eye_boy", "small_road", "cockroach_pig"]) {
      const td = el("td");
      td.dataset.road = name;
      td.dataset.colour = marks[name] || "";
      if (marks[name]) td.append(el("span", "mark " + marks[name]));
      tr.append(td);
    }
    rows.push(tr);
  }
  fill($("next"), rows);
  const sides = s.game === "dragon-tiger" ? ["dragon", "tiger"] : ["player", "banker"];
  const last = s.results[0];
  $("hand-title").textContent = s.current.hand ? `Hand ${s.current.hand}` : "Hand";
  fill($("hand-cards"), sides.map((side) => {
    const d = el("div", "side");
    d.dataset.side = side;
    d.append(el("b", "", side));
    for (const c of s.current[side] || []) d.append(card(c));
    if (last && last.hand === s.current.hand && last[side + "_total"] !== undefined) {
      d.append(el("span", "total", " " + last[side + "_total"]));
    }
    return d;
  }));
  fill($("results"), s.results.map((r) => {
    const li = el("li", "", `hand ${r.hand}: ${r.winner}` +
      (r.player_total !== undefined ? ` (${r.player_total}–${r.banker_total})` : ""));
    li.dataset.hand = r.hand;
    li.dataset.winner = r.winner;
    return li;
  }));
}

// -- roulette -------------------------------------------------------------------------------

function num(n, colour, count) {
  const li = el("li");
  li.dataset.number = n;
  li.append(el("span", "num " + colour, n === 37 ? "00" : n));
  if (count !== undefined) {
    li.dataset.count = count;
    li.append(el("span", "n", `×${count}`));
  }
  return li;
}

const RED = new Set([1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36]);
const colourOf = (n) => (n === 0 || n === 37 ? "green" : RED.has(n) ? "red" : "black");

function bars(id, pairs) {
  fill($(id), pairs.map(([label, value]) => {
    const s = el("span");
    s.dataset.what = label;
    s.dataset.count = value;
    s.append(el("b", "", label), document.createTextNode(String(value)));
    return s;
  }));
}

function drawRoulette(s) {
  fill($("last-numbers"), s.results.map((r) => {
    const li = num(r.number, r.color);
    li.dataset.spin = r.spin;
    return li;
  }));
  const st = s.stats;
  $("hot-window").textContent = `(last ${st.window})`;
  fill($("hot"), st.hot.map(([n, c]) => num(n, colourOf(n), c)));
  fill($("cold"), st.cold.map(([n, c]) => num(n, colourOf(n), c)));
  bars("colours", [["red", st.red], ["black", st.black], ["zero", st.green]]);
  bars("parities", [["odd", st.odd], ["even", st.even]]);
}

// -- Sic Bo ---------------------------------------------------------------------------------

function drawSicbo(s) {
  fill($("last-dice"), s.results.map((r) => {
    const li = el("li");
    li.dataset.round = r.round;
    li.dataset.faces = r.faces.join(",");
    li.dataset.total = r.total;
    for (const f of r.faces) li.append(el("span", "die", DIE[f]));
    li.append(el("span", "", r.faces.join(" ")));
    li.append(el("b", "", r.total));
    const size = r.triple ? "triple" : r.size;
    li.append(el("span", "size-" + size, size));
    return li;
  }));
  const st = s.stats;
  $("dice-window").textContent = `(last ${st.window})`;
  bars("sizes", [["big", st.big], ["small", st.small], ["triple", st.triple]]);
  bars("dice-parities", [["odd", st.odd], ["even", st.even]]);
}

// -- Pai Gow --------------------------------------------------------------------------------

function drawPaigow(s) {
  const cur = s.current;
  $("pg-title").textContent = s.hand ? `Round ${s.hand}` + (cur.dice ? `: dice ${cur.dice.join(" ")} = ${cur.total}` : "") : "This round";
  fill($("pg-current"), Object.entries(cur.tiles || {}).map(([pos, tiles]) => {
    const d = el("div", "position");
    d.dataset.position = pos;
    d.append(el("h3", "", pos));
    for (const t of tiles) d.append(el("span", "card", t === "wd" ? "白" : t));
    return d;
  }));
  fill($("pg-rounds"), s.results.map((r) => {
    const tr = el("tr");
    tr.dataset.round = r.round;
    tr.append(el("td", "", `round ${r.round}`), el("td", "", r.dice.join(" ")));
    for (const p of r.positions) {
      const tiles = p.tiles.map((t) => (t === "wd" ? "白" : t)).join(" ");
      const td = el("td", p.result ? "outcome-" + p.result : "", `${p.position}: ${tiles} (${p.points})`);
      td.dataset.position = p.position;
      tr.append(td);
    }
    return tr;
  }));
}

// -- Blackjack ------------------------------------------------------------------------------

function drawBlackjack(s) {
  const cur = s.current;
  const res = cur.result;
  fill($("bj-dealer"), (cur.dealer || []).map(card));
  $("bj-dealer-total").textContent = res ? `${res.dealer.total}${res.dealer.bust ? " bust" : ""}${res.dealer.blackjack ? " blackjack" : ""}` : "";
  $("expects").textContent = res ? "round over" : cur.expects || "";
  const boxes = res
    ? res.boxes.map((b) => [String(b.box), b.hands.map((h) => h.cards), b.hands.map((h) => h.outcome)])
    : Object.entries(cur.boxes || {}).map(([b, hands]) => [b, hands, []]);
  fill($("boxes"), boxes.map(([b, hands, outcomes]) => {
    const d = el("div", "box");
    d.dataset.box = b;
    const decision = (cur.decisions || {})[b];
    d.append(el("h3", "", `box ${b}` + (decision && !res ? ` · ${decision}` : "")));
    hands.forEach((cards, i) => {
      const h = el("div", "cards");
      for (const c of cards) h.append(card(c));
      if (outcomes[i]) h.append(el("span", "outcome-" + outcomes[i], " " + outcomes[i]));
      d.append(h);
    });
    return d;
  }));
  fill($("results"), s.results.map((r) => {
    const li = el("li", "", `hand ${r.hand}: dealer ${r.dealer.blackjack ? "blackjack" : r.dealer.total}`);
    li.dataset.hand = r.hand;
    return li;
  }));
}

// -- the frame every game shares ------------------------------------------------------------

function render(s) {
  document.body.dataset.seq = s.seq;
  document.body.dataset.game = s.game || "";
  $("table").textContent = s.table;
  const where = [];
  if (s.shoe !== null) where.push(`shoe ${s.shoe}`);
  if (s.game === "roulette") {
    if (s.spin !== null) where.push(`spin ${s.spin}`);
  } else if (s.hand !== null) {
    where.push(`${s.game === "sicbo" || s.game === "paigow" ? "round" : "hand"} ${s.hand}`);
  }
  if (s.last_hand) where.push("last hand of the shoe");
  $("where").textContent = where.join(" · ");
  $("dealer").hidden = !s.dealer;
  $("dealer").textContent = s.dealer ? `dealer ${s.dealer}` : "";
  $("limits").hidden = !s.limits;
  $("limits").textContent = s.limits || "";
  const online = $("online");
  online.className = s.online ? "online" : "offline";
  online.textContent = s.online ? "● live" : "table offline";
  $("banner").dataset.status = s.online ? s.status : "waiting";
  $("status").textContent = s.online ? s.status_text : "table offline: waiting for it";
  $("detail").textContent = s.online && s.detail ? s.detail : "";
  $("error").hidden = !s.error;
  $("error").textContent = s.error || "";
  for (const id of new Set(Object.values(SECTIONS))) $(id).hidden = SECTIONS[s.game] !== id;
  $("results-panel").hidden = !["baccarat", "dragon-tiger", "blackjack"].includes(s.game);
  if (s.game === "baccarat" || s.game === "dragon-tiger") drawRoads(s);
  else if (s.game === "roulette") drawRoulette(s);
  else if (s.game === "sicbo") drawSicbo(s);
  else if (s.game === "paigow") drawPaigow(s);
  else if (s.game === "blackjack") drawBlackjack(s);
  tick();
}

function tick() {
  const c = $("countdown");
  if (!snap || !snap.online || snap.status !== "betting" || snap.closes_at === null) {
    c.textContent = "";
    return;
  }
  const left = Math.max(0, Math.ceil(snap.closes_at - (Date.now() + skew) / 1000));
  c.textContent = `${left} s`;
  c.dataset.left = left;
}

function connect() {
  const es = new EventSource("events");
  es.onopen = () => { document.body.dataset.link = "ok"; };
  es.onmessage = (m) => {
    snap = JSON.parse(m.data);
    skew = snap.now * 1000 - Date.now();
    document.body.dataset.link = "ok";
    render(snap);
  };
  es.onerror = () => {
    // the display's service restarted or the network dropped: say so, and try again
    document.body.dataset.link = "lost";
    $("online").textContent = "display reconnecting…";
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, 1000);
  };
}

setInterval(tick, 250);
connect();
