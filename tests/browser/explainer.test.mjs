// Browser tests of the explainer UI: Debian's chromium driven by playwright-core against a real
// `nucleus serve` on stories260K. Run by scripts/test-browser.sh (which installs playwright-core into
// tests/browser/.npm); exits non-zero on the first failed check, and when chromium or playwright-core
// is missing. Screenshots of each panel go to NUCLEUS_ARTIFACTS (default build/browser-artifacts).
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

function fail(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}
if (!fs.existsSync(chromiumPath)) fail(`chromium not found at ${chromiumPath} (run scripts/install-deps.sh)`);
if (!fs.existsSync(path.join(modules, 'playwright-core'))) fail(`playwright-core not installed in ${modules} (run scripts/test-browser.sh)`);
if (!fs.existsSync(binary)) fail(`nucleus binary not found at ${binary} (build first)`);
const model = path.join(shared, 'models', 'stories260K.gguf');
if (!fs.existsSync(model)) fail(`model not found at ${model} (set NUCLEUS_SHARED_DIR)`);
fs.mkdirSync(artifacts, { recursive: true });
const { chromium } = await import(pathToFileURL(path.join(modules, 'playwright-core', 'index.mjs')).href);

// --port 0: the server picks a free port and names it on stderr.
const server = spawn(binary, ['serve', '-m', model, '--port', '0', '-t', '1', '--kv-cache-mem', '32'], { stdio: ['ignore', 'ignore', 'pipe'] });
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

await check('panel 2 shows the traced steps of /explain/trace', async () => {
  await page.fill('#trace-tokens', '12');
  const [response] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/explain/trace')), page.click('#run-trace')]);
  const data = await response.json();
  await page.waitForSelector('#trace-step-count');
  assert.equal(Number(await text(page, '#trace-step-count')), data.steps.length);
  assert.equal(Number(await text(page, '#trace-prefill-tokens')), data.steps[0].tokens);
  assert.equal(await text(page, '#trace-prefill-intensity'), `${data.steps[0].intensity.toFixed(2)} FLOP/byte`);
  assert.equal(await page.locator('#trace-table tbody tr').count(), data.steps.length);
  assert.equal(await page.locator('#roofline-chart .step').count(), data.steps.length);
  assert.equal(await page.locator('#roofline-chart .step.prefill').count(), 1);
  await page.locator('#roofline').screenshot({ path: path.join(artifacts, 'panel2-roofline.png') });
});

await check('panel 3 shows the passes of /explain/speculative', async () => {
  await page.selectOption('#proposer', 'self');
  await page.fill('#gamma', '3');
  await page.fill('#spec-tokens', '24');
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
  assert.equal(await page.locator('#speedup-chart circle.measured').count(), 1);
  await page.locator('#speculative').screenshot({ path: path.join(artifacts, 'panel3-speculative.png') });
});

await check('panel 4 measures the batching curve with progress and marks the knee', async () => {
  await page.fill('#batch-sizes', '1,2,4');
  await page.fill('#batch-prompt', '8');
  await page.fill('#batch-gen', '8');
  await page.click('#run-batching');
  await page.waitForSelector('body[data-batching-state="done"]', { timeout: 90000 });
  const data = await (await fetch(`${base}/explain/batching`)).json();
  assert.equal(data.state, 'done');
  assert.equal(Number(await text(page, '#batch-knee')), data.knee);
  assert.equal(await page.locator('#batch-progress').evaluate((p) => p.value), 3);
  await page.locator('#batch-pick').focus();
  await page.keyboard.press('End');
  assert.equal(Number(await text(page, '#batch-point-size')), 4);
  assert.equal(await text(page, '#batch-point-throughput'), `${data.points[2].gen_tok_s.toFixed(1)} tok/s`);
  assert.equal(await page.locator('#batching-chart line.knee').count(), 1);
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
