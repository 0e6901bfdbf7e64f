// Browser tests of the explainer UI: Debian's chromium driven by playwright-core against a real
// `nucleus serve` on stories260K, its speed panels on the speed model (NUCLEUS_SPEED_MODEL, written by
// scripts/speed-model.sh: random weights, 120 MB of F16, so decode is memory-bound). Run by
// scripts/test-browser.sh (which installs playwright-core into tests/browser/.npm and writes the
// speed model); exits non-zero on the first failed check, and when chromium, playwright-core or a
// model is missing. Screenshots of each panel go to NUCLEUS_ARTIFACTS (default build/browser-artifacts).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');
const modules = process.env.PLAYWRIGHT_NODE_MODULES ?? path.join(here, '.npm', 'node_modules');
const binary = process.env.NUCLEUS_BINARY ?? path.join(root, 'build', 'nucleus');
const shared = process.env.NUCLEUS_SHARED_DIR ?? path.join(root, '..', 'shared');
const artifacts = process.env.NUCLEUS_ARTIFACTS ?? path.join(root, 'build', 'browser-artifacts');
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const speedModel = process.env.NUCLEUS_SPEED_MODEL ?? path.join(path.dirname(binary), 'speed-model.gguf');

function fail(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}
if (!fs.existsSync(chromiumPath)) fail(`chromium not found at ${chromiumPath} (run scripts/install-deps.sh)`);
if (!fs.existsSync(path.join(modules, 'playwright-core'))) fail(`playwright-core not installed in ${modules} (run scripts/test-browser.sh)`);
if (!fs.existsSync(binary)) fail(`nucleus binary not found at ${binary} (build first)`);
const model = path.join(shared, 'models', 'stories260K.gguf');
if (!fs.existsSync(model)) fail(`model not found at ${model} (set NUCLEUS_SHARED_DIR)`);
if (!fs.existsSync(speedModel)) fail(`speed model not found at ${speedModel} (scripts/test-browser.sh writes it)`);
fs.mkdirSync(artifacts, { recursive: true });
const { chromium } = await import(pathToFileURL(path.join(modules, 'playwright-core', 'index.mjs')).href);

// --port 0: the server picks a free port and names it on stderr. One thread: timings stay honest
// on a busy 2-core machine (two OpenMP threads there wait on each other's core).
const server = spawn(binary, ['serve', '-m', model, '--speed-model', speedModel, '--port', '0', '-t', '1', '--kv-cache-mem', '32'], { stdio: ['ignore', 'ignore', 'pipe'] });
let serverLog = '';
const base = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`server did not report its port:\n${serverLog}`)), 30000);
  server.stderr.on('data', (chunk) => {
    serverLog += chunk;
    const match = serverLog.match(/listening on (http:\/\/[0-9.]+:\d+)/);
    if (match) {
      clearTimeout(timer);
      resolve(match[1]);
    }
  });
  server.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${serverLog}`)));
}).catch((error) => fail(error.message));
for (let i = 0; ; ++i) {
  const ok = await fetch(`${base}/health`).then((r) => r.ok).catch(() => false);
  if (ok) break;
  if (i > 300) fail(`server not healthy:\n${serverLog}`);
  await new Promise((r) => setTimeout(r, 100));
}

let browser;
let passed = 0;
async function check(name, body) {
  const start = Date.now();
  try {
    await body();
    ++passed;
    console.log(`ok - ${name} (${Date.now() - start} ms)`);
  } catch (error) {
    console.error(`not ok - ${name}\n${error.stack}`);
    await browser?.close().catch(() => {});
    server.kill('SIGTERM');
    process.exit(1);
  }
}

async function openPage(width, height) {
  const page = await browser.newPage({ viewport: { width, height } });
  const errors = [];
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.goto(base + '/');
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
  return { page, errors };
}

const renders = (page) => page.evaluate(() => Number(document.body.dataset.distributionRenders || 0));
// Sets a knob's number box and waits until the chart has been redrawn with it.
async function setKnob(page, id, value) {
  const before = await renders(page);
  await page.fill(`#${id}`, String(value));
  await page.waitForFunction((n) => Number(document.body.dataset.distributionRenders || 0) > n, before);
}
const solidBars = (page) => page.locator('#distribution-chart rect.solid').count();
const topBarProbability = (page) => page.locator('#distribution-chart g.bar').first().getAttribute('data-prob').then(Number);
const text = (page, selector) => page.locator(selector).textContent();

try {
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
} catch (error) {
  server.kill('SIGTERM');
  fail(`cannot launch chromium: ${error.message}`);
}
const { page, errors } = await openPage(1280, 800);

await check('the page loads without console errors and shows 30 bars', async () => {
  assert.equal(await page.locator('#context').inputValue(), 'Once upon a time');
  assert.equal(await page.locator('#distribution-chart g.bar').count(), 30);
  assert.deepEqual(errors, []);
});

await check('the page says the speed panels run on random weights of a given shape', async () => {
  const facts = await text(page, '#speed-model-facts');
  assert.match(facts, /random weights of shape 5 layers of width 1024/);
  assert.match(facts, /speed does not depend on the values/);
  assert.match(facts, /1[12]\d MB of F16 weights read per decode step/);
});

await check('top-k = 1 leaves exactly one solid bar', async () => {
  await setKnob(page, 'top-k', 1);
  assert.equal(await solidBars(page), 1);
  assert.equal(await text(page, '#kept-count'), '1');
  await setKnob(page, 'top-k', 0);
  assert.equal(await solidBars(page), 30);
});

await check('the top-k slider works from the keyboard', async () => {
  await page.focus('#top-k-range');
  const before = await renders(page);
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction((n) => Number(document.body.dataset.distributionRenders || 0) > n, before);
  assert.equal(await page.locator('#top-k').inputValue(), '1');
  assert.equal(await solidBars(page), 1);
  await setKnob(page, 'top-k', 0);
});

await check('raising the temperature lowers the top bar', async () => {
  await setKnob(page, 'temperature', 0.7);
  const cold = await topBarProbability(page);
  await setKnob(page, 'temperature', 2);
  const hot = await topBarProbability(page);
  assert.ok(hot < cold, `top bar ${hot} at T=2 should be below ${cold} at T=0.7`);
  await setKnob(page, 'temperature', 1);
});

await check('top-p = 0.5 keeps the count the raw probabilities imply', async () => {
  await setKnob(page, 'top-p', 0.5);
  const context = await page.locator('#context').inputValue();
  const raw = await (await fetch(`${base}/explain/distribution`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ context, temperature: 1, top_n: 512 }) })).json();
  let expected = 0, mass = 0;
  for (const token of raw.tokens) {
    ++expected;
    mass += token.raw_prob;
    if (mass >= 0.5) break;
  }
  assert.equal(Number(await text(page, '#kept-count')), expected);
  assert.equal(await solidBars(page), Math.min(expected, 30));
  await page.locator('#distribution').screenshot({ path: path.join(artifacts, 'panel1-distribution.png') });
  await setKnob(page, 'top-p', 1);
});

await check('Sample appends a token to the context', async () => {
  const before = await page.locator('#context').inputValue();
  await page.click('#sample');
  await page.waitForFunction((old) => document.getElementById('context').value !== old, before);
  const after = await page.locator('#context').inputValue();
  assert.ok(after.startsWith(before) && after.length > before.length, `${JSON.stringify(after)} should extend ${JSON.stringify(before)}`);
  await page.locator('#context').fill('Once upon a time');
});

await check('Resample, Greedy and Beam show continuations', async () => {
  await page.click('#resample');
  await page.waitForSelector('#resample-list li');
  await page.click('#beam');
  await page.waitForSelector('#continuation-list p');
  assert.ok((await page.locator('#continuation-list p').count()) >= 2);
});

await check('panel 1 measures degeneration: greedy repeats more 4-grams than sampling', async () => {
  assert.equal(await page.locator('#degeneration-tokens').inputValue(), '256');
  const [response] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/explain/degeneration')), page.click('#run-degeneration')]);
  const data = await response.json();
  await page.waitForSelector('#degeneration-sampling-rep4');
  const share = (method) => data.outputs.find((o) => o.method === method).repetition.repeated_4gram_share;
  for (const method of ['greedy', 'beam', 'sampling'])
    assert.equal(await text(page, `#degeneration-${method}-rep4`), `${(share(method) * 100).toFixed(1)}%`, method);
  console.log(`  repeated 4-grams: greedy ${share('greedy').toFixed(3)}, beam ${share('beam').toFixed(3)}, sampling ${share('sampling').toFixed(3)}`);
  assert.ok(share('greedy') > share('sampling'), `greedy ${share('greedy')} should repeat more than sampling ${share('sampling')}`);
  // Greedy's longest repeated span is marked at both places it occurs (one mark when they touch).
  const loop = data.outputs[0].repetition;
  assert.ok(loop.longest_loop > 0);
  assert.equal(await page.locator('#degeneration-outputs article.greedy mark').count(), loop.loop_period > loop.longest_loop ? 2 : 1);
  await page.locator('#distribution').screenshot({ path: path.join(artifacts, 'panel1-degeneration.png') });
});

await check('panel 2 shows the traced steps of /explain/trace; decode runs at ≥ 50% of the memory roof', async () => {
  await page.fill('#trace-tokens', '12');
  // Decode on the memory-bound speed model moves at least half the measured read bandwidth. On a
  // machine busy with other work one trace can be slowed down: up to three traces, the best counts.
  let data, share = 0;
  for (let attempt = 1; attempt <= 3 && share < 0.5; ++attempt) {
    const [response] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/explain/trace')), page.click('#run-trace')]);
    data = await response.json();
    const decodes = data.steps.slice(1).map((s) => s.gb_per_s).sort((a, b) => a - b);
    const median = decodes[Math.floor(decodes.length / 2)];
    share = median / data.machine.read_gb_per_s;
    console.log(`  trace ${attempt}: decode median ${median.toFixed(2)} GB/s of ${data.machine.read_gb_per_s.toFixed(2)} GB/s: ${(share * 100).toFixed(0)}%`);
    await page.waitForFunction((n) => document.getElementById('trace-step-count')?.textContent === String(n), data.steps.length);
  }
  assert.ok(share >= 0.5, `decode at ${(share * 100).toFixed(0)}% of the bandwidth roof`);
  assert.equal(Number(await page.locator('#trace-roof-share').getAttribute('data-share')), share);
  assert.ok(data.steps[1].weight_bytes > 100e6, `decode reads ${data.steps[1].weight_bytes} bytes of weights`);
  assert.equal(Number(await text(page, '#trace-prefill-tokens')), data.steps[0].tokens);
  assert.equal(await text(page, '#trace-prefill-intensity'), `${data.steps[0].intensity.toFixed(2)} FLOP/byte`);
  assert.equal(await page.locator('#trace-table tbody tr').count(), data.steps.length);
  assert.equal(await page.locator('#roofline-chart .step').count(), data.steps.length);
  assert.equal(await page.locator('#roofline-chart .step.prefill').count(), 1);
});

await check('panel 2 plays the generation step by step on the roofline', async () => {
  const steps = await page.locator('#trace-table tbody tr').count();
  await page.focus('#play-trace');
  await page.keyboard.press('Enter');
  await page.waitForSelector('body[data-play-state="playing"]');
  await page.waitForFunction(() => Number(document.body.dataset.playStep) >= 1);
  // Mid-play: the bars so far are drawn, and the readout names the current step.
  const frame = await page.evaluate(() => ({ step: Number(document.body.dataset.playStep),
    shown: document.querySelectorAll('#bytes-chart .step-bars.shown').length, readout: document.getElementById('play-readout').textContent }));
  assert.equal(frame.shown, frame.step + 1);
  assert.match(frame.readout, new RegExp(`^Step ${frame.step} \\((decode|prefill), \\d+ tokens?\\): loaded`));
  await page.waitForSelector('body[data-play-state="done"]', { timeout: 30000 });
  assert.equal(Number(await page.evaluate(() => document.body.dataset.playStep)), steps - 1);
  assert.equal(await page.locator('#bytes-chart .step-bars.shown').count(), steps);
  assert.equal(await page.locator('#roofline-chart circle.cursor').getAttribute('visibility'), 'visible');
  await page.locator('#roofline').screenshot({ path: path.join(artifacts, 'panel2-roofline.png') });
});

await check('panel 3 shows the passes of /explain/speculative', async () => {
  await page.selectOption('#proposer', 'self');
  await page.fill('#gamma', '3');
  await page.fill('#spec-tokens', '16');
  const [response] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/explain/speculative')), page.click('#run-speculative')]);
  const data = await response.json();
  await page.waitForSelector('#spec-alpha');
  assert.equal(await text(page, '#spec-alpha'), data.alpha.toFixed(3));
  assert.equal(Number(await text(page, '#spec-pass-count')), data.passes.length);
  assert.equal(await text(page, '#spec-speedup'), `${data.measured_speedup.toFixed(2)}×`);
  assert.equal(await page.locator('#spec-passes li').count(), data.passes.length);
  for (const status of ['accepted', 'rejected', 'corrected', 'bonus']) {
    const expected = data.passes.flatMap((p) => p.tokens).filter((t) => t.status === status).length;
    assert.equal(await page.locator(`#spec-passes .chip.${status}`).count(), expected, status);
  }
  assert.equal(await page.locator('#theory-chart circle.measured').count(), 1);
  assert.equal(await page.locator('#theory-gamma').inputValue(), '3');  // the run's γ and c set the curves
  assert.equal(await page.locator('#theory-cost').inputValue(), String(Number(data.cost_ratio.toFixed(3))));
  // Each proposer adds its own measured point to the same axes.
  await page.selectOption('#proposer', 'ngram');
  await Promise.all([page.waitForResponse((r) => r.url().endsWith('/explain/speculative')), page.click('#run-speculative')]);
  await page.waitForFunction(() => document.querySelectorAll('#theory-chart circle.measured').length === 2);
});

await check('panel 3: moving the α slider gives the formula\'s tokens per pass and speedup', async () => {
  const expected = (alpha, gamma, c) => {
    const tokens = (1 - alpha ** (gamma + 1)) / (1 - alpha);
    return [tokens.toFixed(3), `${(tokens / (gamma * c + 1)).toFixed(3)}×`];
  };
  await page.fill('#theory-gamma', '4');
  await page.fill('#theory-cost', '0.1');
  await page.fill('#theory-alpha', '0.8');
  assert.deepEqual([await text(page, '#theory-tokens-per-pass'), await text(page, '#theory-speedup')], expected(0.8, 4, 0.1));
  assert.deepEqual(expected(0.8, 4, 0.1), ['3.362', '2.401×']);
  await page.focus('#theory-alpha-range');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.locator('#theory-alpha').inputValue(), '0.81');
  assert.deepEqual([await text(page, '#theory-tokens-per-pass'), await text(page, '#theory-speedup')], expected(0.81, 4, 0.1));
  await page.locator('#speculative').screenshot({ path: path.join(artifacts, 'panel3-speculative.png') });
});

await check('panel 4 measures the batching curve: throughput climbs to the knee; speed panels answer 409 meanwhile', async () => {
  await page.fill('#batch-sizes', '1,4,16,48');
  await page.fill('#batch-prompt', '4');
  await page.fill('#batch-gen', '8');
  await page.click('#run-batching');
  await page.waitForFunction(() => document.getElementById('batch-status').textContent.startsWith('measuring'));
  const busy = await fetch(`${base}/explain/trace`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"max_tokens": 2}' });
  assert.equal(busy.status, 409);
  assert.equal((await busy.json()).error.code, 'busy');
  await page.waitForSelector('body[data-batching-state="done"]', { timeout: 120000 });
  const data = await (await fetch(`${base}/explain/batching`)).json();
  assert.equal(data.state, 'done');
  const rate = Object.fromEntries(data.points.map((p) => [p.batch, p.gen_tok_s]));
  const best = Math.max(...Object.values(rate));
  console.log(`  generated tok/s: ${data.points.map((p) => `${p.batch}: ${p.gen_tok_s.toFixed(1)}`).join(', ')}; knee ${data.knee}`);
  assert.ok(rate[48] >= 3 * rate[1], `batch 48: ${rate[48]} tok/s, not 3× batch 1's ${rate[1]}`);
  // The knee: the first batch within 10% of the best throughput; every smaller batch is below that.
  assert.ok(data.knee > 1 && rate[data.knee] >= 0.9 * best, `knee ${data.knee}`);
  for (const p of data.points) if (p.batch < data.knee) assert.ok(p.gen_tok_s < 0.9 * best, `batch ${p.batch} already at the plateau`);
  assert.equal(Number(await text(page, '#batch-knee')), data.knee);
  assert.equal(await page.locator('#batch-progress').evaluate((p) => p.value), 4);
  await page.locator('#batch-pick').focus();
  await page.keyboard.press('End');
  assert.equal(Number(await text(page, '#batch-point-size')), 48);
  assert.equal(await text(page, '#batch-point-throughput'), `${data.points[3].gen_tok_s.toFixed(1)} tok/s`);
  assert.equal(await page.locator('#batching-chart line.knee').count(), 1);
});

await check('panel 4: continuous batching finishes the mixed workload before static batching (both measured)', async () => {
  assert.equal(await page.locator('#sched-lengths').inputValue(), '48,6,10,40,8,12,36,4');
  assert.equal(await page.locator('#sched-batch').inputValue(), '4');
  const [response] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/explain/schedules')), page.click('#run-schedules')]);
  const data = await response.json();
  await page.waitForSelector('body[data-schedules="done"]');
  console.log(`  continuous ${(data.continuous.total_seconds * 1000).toFixed(0)} ms (mean latency ${(data.continuous.mean_latency_seconds * 1000).toFixed(0)} ms), ` +
    `static ${(data.static.total_seconds * 1000).toFixed(0)} ms (mean latency ${(data.static.mean_latency_seconds * 1000).toFixed(0)} ms)`);
  assert.ok(data.continuous.total_seconds < data.static.total_seconds);
  assert.equal(await page.locator('#sched-continuous-chart g.request').count(), 8);
  assert.equal(await page.locator('#sched-static-chart g.request').count(), 8);
});

await check('panel 4: paged KV blocks fit more requests than contiguous max-length allocation', async () => {
  const [response] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/explain/kv_memory')), page.click('#run-kv-memory')]);
  const data = await response.json();
  await page.waitForSelector('#kv-paged-requests');
  assert.equal(Number(await text(page, '#kv-paged-requests')), data.paged.requests);
  assert.equal(Number(await text(page, '#kv-contiguous-requests')), data.contiguous.requests);
  assert.ok(data.paged.requests > data.contiguous.requests);
  assert.equal(await page.locator('#kv-chart .block').count(), data.num_blocks);
  await page.locator('#batching').screenshot({ path: path.join(artifacts, 'panel4-batching.png') });
});

await check('text has readable contrast and every control is labelled and reachable by keyboard', async () => {
  const problems = await page.evaluate(() => {
    // WCAG 2 relative luminance and contrast ratio.
    const parse = (c) => (c.match(/[\d.]+/g) || []).map(Number);
    const luminance = ([r, g, b]) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c;
      }
      return [255, 255, 255];
    };
    const out = [];
    let checked = 0;
    for (const el of document.querySelectorAll('body *')) {
      if (el.closest('svg')) continue;  // chart labels are checked by their own colours below
      const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      const rect = el.getBoundingClientRect();
      if (!own || rect.width === 0 || rect.height === 0) continue;
      const style = getComputedStyle(el);
      if (style.visibility === 'hidden' || Number(style.opacity) < 0.5) continue;
      const a = luminance(parse(style.color)), b = luminance(background(el));
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      ++checked;
      if (ratio < 4.5) out.push(`${el.tagName.toLowerCase()}#${el.id} "${el.textContent.trim().slice(0, 30)}" contrast ${ratio.toFixed(2)}`);
    }
    for (const el of document.querySelectorAll('input, button, select, textarea')) {
      if (el.type === 'hidden') continue;
      const labelled = el.labels?.length || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') ||
                       (el.tagName === 'BUTTON' && el.textContent.trim());
      if (!labelled) out.push(`${el.tagName.toLowerCase()}#${el.id} has no label`);
      if (el.tabIndex < 0) out.push(`${el.tagName.toLowerCase()}#${el.id} is not reachable by keyboard`);
    }
    if (checked < 20) out.push(`only ${checked} text elements were found to check`);
    return out;
  });
  assert.deepEqual(problems, []);
});

await check('no console errors after using every panel', async () => {
  assert.deepEqual(errors, []);
  await page.screenshot({ path: path.join(artifacts, 'page-1280x800.png'), fullPage: true });
});

await check('the page works on a 400 px wide screen', async () => {
  const narrow = await openPage(400, 800);
  const overflow = await narrow.page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(overflow <= 400, `the page is ${overflow} px wide at a 400 px viewport`);
  assert.equal(await narrow.page.locator('#distribution-chart g.bar').count(), 30);
  const before = await narrow.page.locator('#context').inputValue();
  await narrow.page.click('#sample');
  await narrow.page.waitForFunction((old) => document.getElementById('context').value !== old, before);
  assert.deepEqual(narrow.errors, []);
  await narrow.page.screenshot({ path: path.join(artifacts, 'page-400px.png'), fullPage: true });
});

await browser.close();
server.kill('SIGTERM');
console.log(`${passed} checks passed; screenshots in ${artifacts}`);
