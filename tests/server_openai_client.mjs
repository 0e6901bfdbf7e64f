// API compatibility with the official `openai` npm client: starts `nucleus serve` on a free loopback
// port with the Qwen2 test model (ChatML template) and drives it through the SDK.
//
// Set-up (once, into a git-ignored folder):   npm install --prefix tests/.npm --no-audit --no-fund openai@4
// Run:   NUCLEUS_BINARY=build/nucleus NUCLEUS_SHARED_DIR=../shared node tests/server_openai_client.mjs
// Exits 0 when every check passes; prints one line per check.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.OPENAI_NODE_MODULES ?? path.join(here, '.npm', 'node_modules');
let OpenAI;
try {
  ({ default: OpenAI } = await import(pathToFileURL(path.join(modules, 'openai', 'index.mjs')).href));
} catch (e) {
  console.error(`FAIL the openai package is not installed in ${modules} (scripts/test.sh installs it): ${e.message}`);
  process.exit(1);
}
const binary = process.env.NUCLEUS_BINARY ?? 'build/nucleus';
const shared = process.env.NUCLEUS_SHARED_DIR ?? path.join(here, '..', '..', 'shared');

const port = await new Promise((resolve) => {
  const probe = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const server = spawn(binary, ['serve', '-m', path.join(shared, 'models/test/qwen2-f16.gguf'), '--port', String(port),
  '--api-key', 'test-key', '--served-model-name', 'qwen', '-t', '1', '--kv-cache-mem', '64'], { stdio: ['ignore', 'ignore', 'pipe'] });
let serverLog = '';
server.stderr.on('data', (d) => { serverLog += d; });
const base = `http://127.0.0.1:${port}`;
for (let i = 0; ; ++i) {
  try { if ((await fetch(`${base}/health`)).status === 200) break; } catch {}
  if (i > 300) throw new Error(`server did not become healthy:\n${serverLog}`);
  await new Promise((r) => setTimeout(r, 20));
}

const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'test-key', maxRetries: 0 });
let failures = 0;
async function check(name, fn) {
  try { await fn(); console.log(`ok   ${name}`); } catch (e) { ++failures; console.log(`FAIL ${name}: ${e.stack ?? e}`); }
}
async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}
const messages = [{ role: 'user', content: 'Tell me about cats 🐱' }];

await check('models.list', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['qwen']);
});
await check('completions.create', async () => {
  const r = await client.completions.create({ model: 'qwen', prompt: 'Hello', max_tokens: 8, temperature: 0, ignore_eos: true });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 8);
});
await check('completions stream equals non-stream (seed)', async () => {
  const body = { model: 'qwen', prompt: 'Once upon a time', max_tokens: 24, temperature: 1, seed: 42 };
  const full = await client.completions.create(body);
  const chunks = await collect(await client.completions.create({ ...body, stream: true }));
  assert.equal(chunks.map((c) => c.choices[0]?.text ?? '').join(''), full.choices[0].text);
});
await check('seed reproducibility', async () => {
  const body = { model: 'qwen', prompt: 'Once', max_tokens: 16, temperature: 1, seed: 7, ignore_eos: true };
  const a = await client.completions.create(body);
  const b = await client.completions.create(body);
  assert.equal(a.choices[0].text, b.choices[0].text);
});
await check('n = 2', async () => {
  const r = await client.completions.create({ model: 'qwen', prompt: 'Once', max_tokens: 6, n: 2, seed: 3, ignore_eos: true });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  assert.equal(r.usage.completion_tokens, 12);
});
await check('n = 2 streaming: both indexes, same texts as non-streaming', async () => {
  const body = { model: 'qwen', prompt: 'Once', max_tokens: 6, n: 2, seed: 3, ignore_eos: true };
  const full = await client.completions.create(body);
  const chunks = await collect(await client.completions.create({ ...body, stream: true }));
  for (const index of [0, 1]) {
    const text = chunks.flatMap((c) => c.choices).filter((c) => c.index === index).map((c) => c.text).join('');
    assert.equal(text, full.choices[index].text);
  }
});
await check('chat n = 2', async () => {
  const r = await client.chat.completions.create({ model: 'qwen', messages, max_tokens: 4, n: 2, seed: 5, ignore_eos: true });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  assert.equal(r.usage.completion_tokens, 8);
});
await check('completion logprobs', async () => {
  const r = await client.completions.create({ model: 'qwen', prompt: 'Once', max_tokens: 4, logprobs: 2, temperature: 0, ignore_eos: true });
  assert.equal(r.choices[0].logprobs.tokens.length, 4);
  assert.equal(Object.keys(r.choices[0].logprobs.top_logprobs[0]).length, 2);
});
await check('stop strings', async () => {
  const base = { model: 'qwen', prompt: 'Once upon a time', max_tokens: 30, temperature: 0, ignore_eos: true };
  const text = (await client.completions.create(base)).choices[0].text;
  const stop = text.slice(10, 13);
  const r = await client.completions.create({ ...base, stop: [stop] });
  assert.equal(r.choices[0].text, text.slice(0, text.indexOf(stop)));
  assert.equal(r.choices[0].finish_reason, 'stop');
});
await check('chat.completions.create', async () => {
  const r = await client.chat.completions.create({ model: 'qwen', messages, max_tokens: 10, seed: 1 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
});
await check('chat stream with usage equals non-stream', async () => {
  const body = { model: 'qwen', messages, max_completion_tokens: 20, temperature: 1, seed: 9 };
  const full = await client.chat.completions.create(body);
  const chunks = await collect(await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }));
  assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), full.choices[0].message.content);
  assert.deepEqual(chunks.at(-1).usage, full.usage);
});
await check('chat logprobs', async () => {
  const r = await client.chat.completions.create({ model: 'qwen', messages, max_tokens: 3, logprobs: true, top_logprobs: 2, ignore_eos: true });
  assert.equal(r.choices[0].logprobs.content.length, 3);
  assert.equal(r.choices[0].logprobs.content[0].top_logprobs.length, 2);
});
await check('response_format json_schema, streamed and not', async () => {
  const schema = {
    type: 'object',
    properties: { rank: { type: 'integer', minimum: 1, maximum: 5 }, city: { type: 'string', maxLength: 8 } },
    required: ['rank', 'city'],
    additionalProperties: false,
  };
  const body = {
    model: 'qwen', messages, max_tokens: 120, seed: 3, temperature: 1,
    response_format: { type: 'json_schema', json_schema: { name: 'place', schema, strict: true } },
  };
  const check_value = (text, finish) => {
    if (finish !== 'stop') return;  // cut by max_tokens
    const v = JSON.parse(text);
    assert.deepEqual(Object.keys(v), ['rank', 'city']);  // the schema's order, not sorted
    assert.equal(typeof v.city, 'string');
    assert.ok([...v.city].length <= 8);
    assert.ok(Number.isInteger(v.rank) && v.rank >= 1 && v.rank <= 5);
  };
  const full = await client.chat.completions.create(body);
  check_value(full.choices[0].message.content, full.choices[0].finish_reason);
  const chunks = await collect(await client.chat.completions.create({ ...body, stream: true }));
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, full.choices[0].message.content);
  check_value(text, chunks.at(-1).choices[0].finish_reason);
  await assert.rejects(
    client.chat.completions.create({ ...body, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { not: {} } } } }),
    (e) => e.status === 400 && /not/.test(e.message));
});
await check('errors map to SDK exceptions', async () => {
  await assert.rejects(client.completions.create({ model: 'nope', prompt: 'x' }), (e) => e.status === 404);
  await assert.rejects(client.completions.create({ model: 'qwen', prompt: 'x', temperature: -1 }),
    (e) => e.status === 400 && e.param === 'temperature');
  const unauthorized = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(unauthorized.models.list(), (e) => e.status === 401);
});
await check('tokenize / detokenize / health / metrics', async () => {
  const t = await (await fetch(`${base}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: 'Hello world' }) })).json();
  const d = await (await fetch(`${base}/detokenize`, { method: 'POST', body: JSON.stringify({ tokens: t.tokens }) })).json();
  assert.equal(d.prompt, 'Hello world');
  assert.equal((await fetch(`${base}/health`)).status, 200);
  const metrics = await (await fetch(`${base}/metrics`)).text();
  assert.match(metrics, /^nucleus_kv_cache_blocks_used 0$/m);
  assert.match(metrics, /^nucleus_generation_tokens_total \d+/m);
});

server.kill('SIGTERM');
const code = await new Promise((resolve) => server.on('exit', (c) => resolve(c)));
if (code !== 0) { ++failures; console.log(`FAIL server exit code ${code}\n${serverLog}`); }
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
