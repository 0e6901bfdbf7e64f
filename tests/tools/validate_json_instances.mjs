// Validates JSON texts against JSON Schemas with ajv (a real, independent validator), for the
// structured-output soundness test. Input: a JSONL file, one {"schema_file", "draft", "text"} per
// line (draft as in shared/structured/INDEX.tsv: 4, 6, 7, 2020-12, 2020-12+7). Output: one JSON line
// per input line: {"ok": true} or {"ok": false, "error": "..."} ("schema_error" when ajv cannot
// compile the schema itself). Formats are asserted (ajv-formats, full mode).
//   node tests/tools/validate_json_instances.mjs INPUT.jsonl
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', '.npm', 'node_modules', 'x.js'));
const Ajv = require('ajv').default;
const Ajv2020 = require('ajv/dist/2020').default;
const AjvDraft04 = require('ajv-draft-04').default;
const addFormats = require('ajv-formats').default;

function validatorFor(draft) {
  const options = { strict: false, allErrors: false, validateFormats: true, logger: false };
  let ajv;
  if (draft === '4') ajv = new AjvDraft04(options);
  else if (draft === '2020-12') ajv = new Ajv2020(options);
  else {
    ajv = new Ajv(options);  // draft 7 (also for draft 6 and for schemas without $schema)
    ajv.addMetaSchema(require('ajv/dist/refs/json-schema-draft-06.json'));
  }
  addFormats(ajv, { mode: 'full' });
  return ajv;
}

const compiled = new Map();
const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.length > 0);
const out = [];
for (const line of lines) {
  const { schema_file: file, draft, text } = JSON.parse(line);
  const key = `${draft}\0${file}`;
  let validate = compiled.get(key);
  if (validate === undefined) {
    try {
      const schema = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (draft !== '4' && draft !== '2020-12') delete schema.$schema;  // the draft is chosen above
      validate = validatorFor(draft === '2020-12+7' ? '7' : draft).compile(schema);
    } catch (e) {
      validate = { schemaError: String(e.message ?? e) };
    }
    compiled.set(key, validate);
  }
  if (validate.schemaError) {
    out.push(JSON.stringify({ ok: false, error: 'schema_error: ' + validate.schemaError }));
    continue;
  }
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    out.push(JSON.stringify({ ok: false, error: 'not JSON: ' + e.message }));
    continue;
  }
  const ok = validate(value);
  out.push(JSON.stringify(ok ? { ok: true } : { ok: false, error: JSON.stringify(validate.errors.slice(0, 2)) }));
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
