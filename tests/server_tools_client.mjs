// Tool calling and reasoning output end to end, through the official `openai` npm client, for each
// tool-call format nucleus reads: small random-weight models (`nucleus synth`) carrying the real chat
// templates of ../shared/templates, served by `nucleus serve`, their calls validated by ajv against
// the tools' schemas. Random weights write random text, so the checks are about the constraint and
// the protocol: required / named tool_choice must give valid calls (streamed and not), "auto" free text
// or a valid call (logit_bias on the trigger's tokens makes the model open a call), a round trip
// (call → tool message) must render exactly as Python's jinja2 renders the template, and a thinking
// model's <think> block must land in reasoning_content with a response_format applied after it.
//
// Run:   NUCLEUS_BINARY=build/nucleus NUCLEUS_SHARED_DIR=../shared node tests/server_tools_client.mjs
// Exits 0 when every check passes; prints one line per check.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.OPENAI_NODE_MODULES ?? path.join(here, '.npm', 'node_modules');
let OpenAI, Ajv;
try {
  ({ default: OpenAI } = await import(pathToFileURL(path.join(modules, 'openai', 'index.mjs')).href));
  Ajv = createRequire(path.join(modules, 'x.js'))('ajv').default;
} catch (e) {
  console.error(`FAIL the openai and ajv packages are not installed in ${modules} (scripts/test.sh installs them): ${e.message}`);
  process.exit(1);
}
const binary = process.env.NUCLEUS_BINARY ?? 'build/nucleus';
const shared = process.env.NUCLEUS_SHARED_DIR ?? path.join(here, '..', '..', 'shared');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'nucleus-tools-'));
const ajv = new Ajv({ strict: false });

let failures = 0;
async function check(name, fn) {
  try { await fn(); console.log(`ok   ${name}`); } catch (e) { ++failures; console.log(`FAIL ${name}: ${e.stack ?? e}`); }
}

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', enum: ['Paris', 'Tokyo', 'Lima'] },
        days: { type: 'integer', minimum: 1, maximum: 7 },
        metric: { type: 'boolean' },
      },
      required: ['city', 'days'],
      additionalProperties: false,
    },
  },
};
const clock = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'The time in a time zone',
    parameters: { type: 'object', properties: { zone: { type: 'integer', minimum: -12, maximum: 14 } }, required: ['zone'], additionalProperties: false },
  },
};
const tools = [weather, clock];
const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

function validateCall(call) {
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  const validate = validators[call.function.name];
  assert.ok(validate, `unknown function ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  assert.ok(validate(args), `${call.function.arguments}: ${ajv.errorsText(validate.errors)}`);
}

// Accumulates a stream's deltas the way OpenAI's clients do; checks the order rules on the way.
function accumulate(chunks) {
  const calls = [];
  let content = '', reasoning = '', finish = null;
  for (const chunk of chunks) {
    for (const choice of chunk.choices) {
      const d = choice.delta ?? {};
      if (d.content) content += d.content;
      if (d.reasoning_content) reasoning += d.reasoning_content;
      for (const t of d.tool_calls ?? []) {
        if (!calls[t.index]) {
          assert.ok(t.id && t.function?.name !== undefined, `the first delta of call ${t.index} carries id and name`);
          calls[t.index] = { id: t.id, type: t.type, function: { name: t.function.name, arguments: t.function.arguments ?? '' } };
        } else {
          assert.equal(t.id, undefined, 'id only on the first delta');
          calls[t.index].function.arguments += t.function?.arguments ?? '';
        }
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { content, reasoning, calls, finish };
}

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function freePort() {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

async function startServer(model) {
  const port = await freePort();
  const server = spawn(binary, ['serve', '-m', model, '--port', String(port), '--served-model-name', 'm', '-t', '1',
    '--kv-cache-mem', '64'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr.on('data', (d) => { log += d; });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; ++i) {
    try { if ((await fetch(`${base}/health`)).status === 200) break; } catch {}
    if (i > 500) throw new Error(`server did not become healthy:\n${log}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { server, base, client: new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0 }), log: () => log };
}

// Qwen 2.5/3 vocabularies hold these added tokens where the shared test vocabulary has padding.
const qwenAddedTokens = ['151657=<tool_call>', '151658=</tool_call>', '151667=<think>', '151668=</think>'].map((t) => ['--token', t]);
// Mistral's vocabularies hold its markers as control tokens (rendered as text: tokenizer/vocab.h).
const mistralControlTokens = ['151657=[TOOL_CALLS]', '151658=[ARGS]', '151659=[CALL_ID]'].map((t) => ['--control-token', t]);

function synth(name, vocab, arch, template, tokens = []) {
  const out = path.join(work, `${name}.gguf`);
  const args = ['synth', '-o', out, '--vocab', path.join(shared, vocab), '--arch', arch, '--dim', '64', '--layers', '2',
    '--heads', '4', '--kv-heads', '2', '--ffn', '128', '--ctx', '4096', '--seed', '7'];
  if (template) args.push('--chat-template', path.join(shared, 'templates', template));
  for (const t of tokens) args.push(...t);
  execFileSync(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  return out;
}

// A POST on a fresh connection: a pooled keep-alive connection the server has meanwhile closed (its
// idle timeout, e.g. while jinja2 renders on a busy machine) would fail the request.
async function post(url, body) {
  return fetch(url, { method: 'POST', body: JSON.stringify(body), keepalive: false, headers: { connection: 'close' } });
}

async function tokenIds(base, text) {
  return (await (await post(`${base}/tokenize`, { prompt: text, add_special_tokens: false })).json()).tokens;
}

// Python's jinja2 rendering of `template` for the messages (tool-call arguments as objects, which is
// what nucleus hands the template).
function referenceRender(template, messages, bos, eos, kwargs) {
  const objectArgs = messages.map((m) => (m.tool_calls ? {
    ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.parse(c.function.arguments) } })),
  } : m));
  const request = path.join(work, 'render.json');
  fs.writeFileSync(request, JSON.stringify({
    templates: [{ path: path.join(shared, 'templates', template) }], date: '2026-12-04',
    cases: [{ messages: objectArgs, add_generation_prompt: true, bos_token: bos, eos_token: eos, tools, ...(kwargs ? { kwargs } : {}) }],
  }));
  const out = JSON.parse(execFileSync('python3', [path.join(here, 'tools', 'render_chat_reference.py'), request]).toString());
  assert.ok(out[0][0].text !== undefined, `jinja2 raised: ${out[0][0].error}`);
  return out[0][0].text;
}

// end: the text of the token that ends an answer (favoured in some checks so a random model stops
// after a complete call instead of writing parallel calls until max_tokens). forceable: the trigger
// is one token (Qwen's added <tool_call>, Mistral's [TOOL_CALLS]) or few enough ('{"name"') that
// logit_bias makes a random model write it.
const families = [
  { name: 'hermes', vocab: 'models/test/qwen2-f16.gguf', arch: 'qwen2', template: 'Qwen-Qwen2.5-7B-Instruct.jinja', tokens: qwenAddedTokens, forceable: true, trigger: '<tool_call>', end: '<|im_end|>', bos: '<|endoftext|>', eos: '<|endoftext|>' },
  // Qwen3: hermes calls; its template opens no <think> in the prompt (the model may), so the checks
  // run with enable_thinking false, which closes an empty one.
  { name: 'hermes-qwen3', vocab: 'models/test/qwen2-f16.gguf', arch: 'qwen2', template: 'Qwen-Qwen3-0.6B.jinja', tokens: qwenAddedTokens, forceable: true, thinkingOptional: true, trigger: '<tool_call>', end: '<|im_end|>', bos: '<|endoftext|>', eos: '<|endoftext|>' },
  { name: 'qwen3-xml', vocab: 'models/test/qwen2-f16.gguf', arch: 'qwen2', template: 'Qwen3.5-4B.jinja', tokens: qwenAddedTokens, forceable: true, trigger: '<tool_call>', end: '<|im_end|>', thinking: true, bos: '<|endoftext|>', eos: '<|endoftext|>' },
  { name: 'llama3-json', vocab: 'models/test/llama3-f16.gguf', arch: 'llama', template: 'meta-llama-Llama-3.1-8B-Instruct.jinja', forceable: true, trigger: '{"name"', end: '<|eot_id|>', bos: '<|begin_of_text|>', eos: '<|eot_id|>' },
  { name: 'mistral', vocab: 'models/test/qwen2-f16.gguf', arch: 'qwen2', template: 'mistralai-Mistral-Nemo-Instruct-2407.jinja', tokens: mistralControlTokens, forceable: true, trigger: '[TOOL_CALLS]', end: '<|endoftext|>', bos: '<|endoftext|>', eos: '<|endoftext|>' },
  { name: 'mistral-args', vocab: 'models/test/qwen2-f16.gguf', arch: 'qwen2', template: 'Mistral-Small-3.2-24B-Instruct-2506.jinja', tokens: mistralControlTokens, forceable: true, trigger: '[TOOL_CALLS]', end: '<|endoftext|>', bos: '<|endoftext|>', eos: '<|endoftext|>' },
  { name: 'generic', vocab: 'models/test/qwen2-f16.gguf', arch: 'qwen2', template: null, trigger: '{"tool_calls"', end: '<|im_end|>', tokens: qwenAddedTokens },
];

const ask = [{ role: 'user', content: 'What is the weather in Paris for three days?' }];
// No thinking for the call checks: a random model would think until max_tokens.
const base = (f) => ({ model: 'm', tools, max_tokens: 160, temperature: 1, seed: 3,
  ...(f.thinking || f.thinkingOptional ? { chat_template_kwargs: { enable_thinking: false } } : {}) });

try {
  for (const f of families) {
    const model = synth(f.name, f.vocab, f.arch, f.template, f.tokens);
    const { server, base: url, client, log } = await startServer(model);
    try {
      const endBias = {};
      for (const id of await tokenIds(url, f.end)) endBias[id] = 10;
      await check(`${f.name}: tool_choice required gives valid calls`, async () => {
        for (const seed of [1, 2, 3]) {
          const r = await client.chat.completions.create({ ...base(f), seed, messages: ask, tool_choice: 'required',
            parallel_tool_calls: false });
          const m = r.choices[0].message;
          assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(m));
          assert.equal(m.tool_calls.length, 1);
          m.tool_calls.forEach(validateCall);
        }
      });
      await check(`${f.name}: tool_choice required with parallel calls, streamed, equals the non-streamed answer`, async () => {
        // A random model may keep adding parallel calls until max_tokens: then the unfinished output is
        // content with finish_reason "length" (never a broken call); either way both forms agree.
        const body = { ...base(f), seed: 5, max_tokens: 300, messages: ask, tool_choice: 'required', logit_bias: endBias };
        const whole = await client.chat.completions.create(body);
        const streamed = accumulate(await collect(await client.chat.completions.create({ ...body, stream: true })));
        assert.equal(streamed.finish, whole.choices[0].finish_reason);
        if (streamed.finish === 'tool_calls') assert.ok(streamed.calls.length >= 1);
        else assert.ok(whole.choices[0].message.content.trimStart().startsWith(f.trigger), whole.choices[0].message.content);
        streamed.calls.forEach(validateCall);
        assert.deepEqual(streamed.calls.map((c) => [c.function.name, c.function.arguments]),
          whole.choices[0].message.tool_calls.map((c) => [c.function.name, c.function.arguments]));
        assert.equal(streamed.content, whole.choices[0].message.content ?? '');
      });
      await check(`${f.name}: a named function, one call (parallel_tool_calls false)`, async () => {
        for (const stream of [false, true]) {
          const body = { ...base(f), messages: ask, tool_choice: { type: 'function', function: { name: 'get_time' } },
            parallel_tool_calls: false };
          const calls = stream ? accumulate(await collect(await client.chat.completions.create({ ...body, stream: true }))).calls
            : (await client.chat.completions.create(body)).choices[0].message.tool_calls;
          assert.equal(calls.length, 1);
          assert.equal(calls[0].function.name, 'get_time');
          validateCall(calls[0]);
        }
      });
      await check(`${f.name}: tool_choice auto gives text or a valid call`, async () => {
        for (const seed of [11, 12]) {
          const r = await client.chat.completions.create({ ...base(f), seed, max_tokens: 24, messages: ask });
          const c = r.choices[0];
          if (c.message.tool_calls?.length) {
            assert.equal(c.finish_reason, 'tool_calls');
            c.message.tool_calls.forEach(validateCall);
          } else {
            assert.ok(['stop', 'length'].includes(c.finish_reason));
            assert.equal(typeof c.message.content, 'string');
          }
        }
      });
      if (f.forceable) await check(`${f.name}: auto, with the trigger's tokens favoured, opens a call that is valid`, async () => {
        const bias = {};
        for (const id of await tokenIds(url, f.trigger)) bias[id] = 30;
        for (const stream of [false, true]) {
          const body = { ...base(f), seed: 21, max_tokens: 200, messages: ask, logit_bias: bias, parallel_tool_calls: false };
          const out = stream ? accumulate(await collect(await client.chat.completions.create({ ...body, stream: true })))
            : (({ message: m, finish_reason }) => ({ calls: m.tool_calls ?? [], finish: finish_reason, content: m.content }))(
              (await client.chat.completions.create(body)).choices[0]);
          assert.equal(out.calls.length, 1, JSON.stringify(out));
          assert.equal(out.finish, 'tool_calls');
          validateCall(out.calls[0]);
        }
      });
      await check(`${f.name}: tool_choice none never calls`, async () => {
        const r = await client.chat.completions.create({ ...base(f), max_tokens: 16, messages: ask, tool_choice: 'none' });
        assert.equal(r.choices[0].message.tool_calls, undefined);
        assert.notEqual(r.choices[0].finish_reason, 'tool_calls');
      });
      if (f.bos !== undefined) {
        await check(`${f.name}: a round trip (call, tool result) renders as jinja2 renders it`, async () => {
          const messages = [
            { role: 'system', content: 'You are terse.' },
            ...ask,
            { role: 'assistant', content: null, tool_calls: [{ id: 'abcDEF123', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "days": 3}' } }] },
            { role: 'tool', tool_call_id: 'abcDEF123', content: '{"temperature": 21}' },
          ];
          const r = await client.chat.completions.create({ ...base(f), max_tokens: 8, messages, tool_choice: 'none' });
          assert.equal(r.object, 'chat.completion');
          const body = { messages: messages.map((m) => (m.content === null ? { ...m, content: '' } : m)), tools,
            ...(f.thinking || f.thinkingOptional ? { chat_template_kwargs: { enable_thinking: false } } : {}) };
          const tokens = (await (await post(`${url}/tokenize`, body)).json()).tokens;
          const expected = referenceRender(f.template, body.messages, f.bos, f.eos, body.chat_template_kwargs);
          // Same tokens as the reference text (BPE and SentencePiece encodings are lossless).
          assert.deepEqual(tokens, await tokenIds(url, expected), 'the prompt nucleus renders');
          assert.ok(expected.includes('Paris') && expected.includes('21'));
        });
      }
      if (f.thinking) {
        await check(`${f.name}: reasoning_content split, response_format applied after </think> (streamed and not)`, async () => {
          const bias = {};
          const close = await tokenIds(url, '</think>');
          assert.equal(close.length, 1, 'the added </think> token');
          bias[close[0]] = 16;  // the model closes its reasoning after some tokens (at 10-14 this random model loops instead)
          const schema = { type: 'object', properties: { answer: { type: 'integer', minimum: 1, maximum: 9 }, sure: { type: 'boolean' } },
            required: ['answer', 'sure'], additionalProperties: false };
          const body = { model: 'm', messages: ask, max_tokens: 300, seed: 4, logit_bias: bias,
            response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } };
          const whole = (await client.chat.completions.create(body)).choices[0];
          assert.equal(whole.finish_reason, 'stop', JSON.stringify(whole));
          assert.ok(typeof whole.message.reasoning_content === 'string');
          assert.ok(!whole.message.reasoning_content.includes('</think>'));
          assert.ok(whole.message.reasoning_content.length > 0, 'some reasoning before the answer');
          assert.ok(ajv.validate(schema, JSON.parse(whole.message.content)), whole.message.content);
          const streamed = accumulate(await collect(await client.chat.completions.create({ ...body, stream: true })));
          assert.equal(streamed.reasoning, whole.message.reasoning_content);
          assert.equal(streamed.content, whole.message.content);
        });
      }
      if (f.thinking) {
        await check(`${f.name}: thinking, then a required call: reasoning_content and a valid call (streamed and not)`, async () => {
          const close = await tokenIds(url, '</think>');
          let reasoned = 0;
          // How soon a random model closes its reasoning depends on the bias on </think>: a sweep; a
          // reasoning that never closes ends at max_tokens (all reasoning, no call), any other ends in a call.
          let called = 0;
          for (const [seed, b] of [10, 12, 14, 16].flatMap((b) => [1, 2, 3].map((seed) => [seed, b]))) {
            const body = { model: 'm', messages: ask, tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 300,
              seed, logit_bias: { [close[0]]: b } };
            const whole = (await client.chat.completions.create(body)).choices[0];
            if (whole.finish_reason === 'length') {
              assert.equal(whole.message.tool_calls, undefined);
              continue;
            }
            assert.equal(whole.finish_reason, 'tool_calls', JSON.stringify(whole));
            ++called;
            if (whole.message.reasoning_content.length > 0) ++reasoned;
            whole.message.tool_calls.forEach(validateCall);
            const streamed = accumulate(await collect(await client.chat.completions.create({ ...body, stream: true })));
            assert.equal(streamed.reasoning, whole.message.reasoning_content);
            assert.deepEqual(streamed.calls.map((c) => c.function), whole.message.tool_calls.map((c) => c.function));
          }
          assert.ok(called > 0 && reasoned > 0, `${called} answers called, ${reasoned} after some reasoning`);
        });
      }
      await check(`${f.name}: bad tool requests are 400s naming the field`, async () => {
        const cases = [
          [{ tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
          [{ tools: [{ type: 'function', function: { description: 'no name' } }] }, 'tools[0].function.name'],
          [{ tools: [{ type: 'retrieval' }] }, 'tools[0].type'],
          [{ tool_choice: 'sometimes' }, 'tool_choice'],
        ];
        for (const [extra, param] of cases) {
          const r = await post(`${url}/v1/chat/completions`, { ...base(f), messages: ask, ...extra });
          assert.equal(r.status, 400);
          assert.equal((await r.json()).error.param, param);
        }
      });
    } finally {
      server.kill('SIGTERM');
      if (failures) console.log(log().split('\n').slice(-20).join('\n'));
    }
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(failures ? 1 : 0);
