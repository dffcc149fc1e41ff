// A signed checkpoint checked with Node's own Ed25519, as docs/events.md describes it:
// node verify_checkpoint.js KEY.ed25519.pub CHECKPOINT.json -> "ok" (exit 0) or "bad" (1)
const crypto = require("crypto");
const fs = require("fs");
const key = crypto.createPublicKey(fs.readFileSync(process.argv[2], "utf8"));
const cp = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const raw = key.export({format: "der", type: "spki"}).subarray(-32);
const keyId = crypto.createHash("sha256").update(raw).digest("hex").slice(0, 16);
const msg = `tabled-checkpoint:${cp.v}:${cp.table}:${cp.journal_id}:${cp.seq}:${cp.hash}`;
const ok = keyId === cp.key_id &&
  crypto.verify(null, Buffer.from(msg, "utf8"), key, Buffer.from(cp.sig, "base64"));
console.log(ok ? "ok" : "bad");
process.exit(ok ? 0 : 1);
