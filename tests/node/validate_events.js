// tabled's event schema in a strict Draft 2020-12 validator, as a Node backend would use it:
// node validate_events.js SCHEMA EXPECTED.jsonl... (tests/test_contract_node.py runs it)
const Ajv2020 = require("ajv/dist/2020");
const fs = require("fs");
const schema = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const ajv = new Ajv2020({strict: true, allErrors: true});
let validate;
try { validate = ajv.compile(schema); } catch (e) { console.log("COMPILE FAILED: " + e.message); process.exit(2); }
let n = 0, bad = 0;
for (const f of process.argv.slice(3)) {
  for (const line of fs.readFileSync(f, "utf8").split("\n")) {
    if (!line.trim()) continue;
    n++;
    if (!validate(JSON.parse(line))) { bad++; if (bad < 3) console.log(f, JSON.stringify(validate.errors).slice(0, 300)); }
  }
}
console.log(`${n} events, ${bad} failed`);
process.exit(bad ? 1 : 0);
