// A backend written from docs/events.md alone, in Node with zeromq and ajv from npm: it
// follows a live table (subscribe, wait for a heartbeat, replay what it missed, then the
// bus, repairing any gap by replay), verifies every event's chain by cutting the "hash"
// member out of the bytes received, and validates every event and heartbeat with the
// schemas in ajv's strict mode.
// node follow_table.js PUBLISH REPLAY TABLE EVENTS_SCHEMA BUS_SCHEMA COUNT
const zmq = require("zeromq");
const crypto = require("crypto");
const fs = require("fs");
const Ajv2020 = require("ajv/dist/2020");

const [publish, replay, table, eventsSchema, busSchema, countText] = process.argv.slice(2);
const want = Number(countText);
const ajv = new Ajv2020({strict: true});
const validEvent = ajv.compile(JSON.parse(fs.readFileSync(eventsSchema, "utf8")));
const validFrame = ajv.compile(JSON.parse(fs.readFileSync(busSchema, "utf8")));
const state = {last: 0, hash: "0".repeat(64), events: 0, heartbeats: 0, replays: 0, types: {}};

function fail(why) {
  console.log(JSON.stringify({error: why, ...state}));
  process.exit(1);
}

function check(raw) {
  // the canonical body: the bytes without the top-level "hash":"<64 hex>", member
  const text = raw.toString("utf8");
  const ev = JSON.parse(text);
  if (!validEvent(ev)) fail(`seq ${ev.seq}: ${JSON.stringify(validEvent.errors).slice(0, 300)}`);
  if (ev.seq !== state.last + 1) fail(`seq ${ev.seq} after ${state.last}`);
  if (ev.prev !== state.hash) fail(`seq ${ev.seq}: prev is not the hash of ${state.last}`);
  const at = raw.lastIndexOf('"hash":"');
  const body = Buffer.concat([raw.subarray(0, at), raw.subarray(at + 8 + 64 + 2)]);
  const digest = crypto.createHash("sha256")
    .update(Buffer.concat([Buffer.from(ev.prev, "hex"), body])).digest("hex");
  if (digest !== ev.hash) fail(`seq ${ev.seq}: hash does not match the bytes`);
  state.last = ev.seq;
  state.hash = ev.hash;
  state.events += 1;
  state.types[ev.type] = (state.types[ev.type] || 0) + 1;
}

async function catchUp(upto) {
  // docs/events.md, "How long to wait": no frame for 10 s is a cut-off replay (a table
  // killed or restarting mid-answer); what came is good, and it is asked again from there
  let cut = 0;
  while (state.last < upto) {
    state.replays += 1;
    const dealer = new zmq.Dealer({receiveTimeout: 10000, linger: 0});
    dealer.connect(replay);
    try {
      await dealer.send(JSON.stringify({from: state.last + 1, to: Math.min(upto, state.last + 500)}));
      for (;;) {
        const [frame] = await dealer.receive();
        if (frame.subarray(0, 8).toString() === '{"data":') { check(frame); continue; }
        const reply = JSON.parse(frame.toString());
        if (!validFrame(reply)) fail(`replay frame: ${JSON.stringify(validFrame.errors)}`);
        if (reply.end !== true) fail(`replay: ${reply.error}`);
        break;
      }
    } catch (e) {
      if (e.code !== "EAGAIN" || ++cut > 12) throw e;  // a timeout: ask again, a few times
    } finally {
      dealer.close();
    }
  }
}

async function main() {
  const sub = new zmq.Subscriber({receiveTimeout: 10000});
  sub.connect(publish);
  sub.subscribe(`${table}.`);
  let started = false;
  let silent = 0;
  while (state.events < want) {
    // no frame for 10 s: the table is down or restarting (a loaded machine may take longer
    // than that to start it), so a backend goes on waiting; only a long silence ends this one
    let topic, raw;
    try {
      [topic, raw] = await sub.receive();
    } catch (e) {
      if (e.code !== "EAGAIN" || ++silent > 12) throw e;
      continue;
    }
    silent = 0;
    const t = topic.toString();
    if (t === `${table}.heartbeat` || t === `${table}.journal.state`) {
      const frame = JSON.parse(raw.toString());
      if (!validFrame(frame)) fail(`${t}: ${JSON.stringify(validFrame.errors)}`);
      if (t.endsWith("heartbeat")) {
        state.heartbeats += 1;
        started = true;
        if (frame.data.last_seq > state.last) await catchUp(frame.data.last_seq);
      }
      continue;
    }
    if (!started) continue;  // before the first heartbeat: the replay brings these
    const seq = JSON.parse(raw.toString()).seq;
    if (seq <= state.last) continue;  // already held (replayed)
    if (seq > state.last + 1) await catchUp(seq - 1);  // a gap: ask for it
    check(raw);
  }
  sub.close();
  console.log(JSON.stringify(state));
}

main().catch((e) => fail(String(e)));
