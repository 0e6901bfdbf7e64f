// Panel 2: a traced generation on the speed model, on this machine's roofline; "press play"
// replays it step by step (trace_player.js): bytes loaded vs useful FLOPs, the point moving.
import { postJson, whileBusy } from './api.js';
import { axes, decades, el, format, log10Scale, newSvg } from './charts.js';
import { drawBytesChart, play } from './trace_player.js';

function $(id) { return document.getElementById(id); }

// Draws the roof and every step; returns moveCursor(i), which rings step i.
function drawRoofline(container, data) {
  const width = 520, height = 340, box = { left: 70, top: 20, right: 505, bottom: 290 };
  const svg = newSvg(container, width, height);
  const { read_gb_per_s: bandwidth, gflop_per_s: peak } = data.machine;
  const intensities = data.steps.map((s) => s.intensity);
  const rates = data.steps.map((s) => s.gflop_per_s);
  const xLo = Math.min(0.1, ...intensities) / 2, xHi = Math.max(1000, ...intensities) * 2;
  const yLo = Math.min(0.01, ...rates.filter((r) => r > 0)) / 2, yHi = Math.max(peak, ...rates) * 2;
  const x = log10Scale(xLo, xHi, box.left, box.right), y = log10Scale(yLo, yHi, box.bottom, box.top);
  axes(svg, box, { xTicks: decades(xLo, xHi).filter((t) => t >= xLo && t <= xHi), yTicks: decades(yLo, yHi).filter((t) => t >= yLo && t <= yHi),
    x, y, xLabel: 'arithmetic intensity (FLOP/byte)', yLabel: 'GFLOP/s' });
  // The roof: min(bandwidth × intensity, peak), drawn as two segments meeting at the ridge.
  const ridge = peak / bandwidth;
  const memoryStart = Math.max(xLo, yLo / bandwidth);
  el('polyline', { points: `${x(memoryStart)},${y(bandwidth * memoryStart)} ${x(ridge)},${y(peak)} ${x(xHi)},${y(peak)}`,
    fill: 'none', stroke: '#1b1f24', 'stroke-width': 2 }, svg);
  el('text', { x: x(ridge) + 6, y: y(peak) - 6 }, svg, `compute peak ${format(peak)} GFLOP/s`);
  el('text', { x: x(memoryStart) + 4, y: y(bandwidth * memoryStart * 1.6) }, svg, `memory ${format(bandwidth)} GB/s`);
  data.steps.forEach((step, i) => {
    const prefill = step.phase === 'prefill';
    const point = el(prefill ? 'rect' : 'circle', prefill
      ? { x: x(step.intensity) - 6, y: y(Math.max(step.gflop_per_s, yLo)) - 6, width: 12, height: 12, fill: 'var(--prefill)' }
      : { cx: x(step.intensity), cy: y(Math.max(step.gflop_per_s, yLo)), r: 4, fill: 'var(--decode)', 'fill-opacity': 0.6 }, svg);
    point.setAttribute('class', `step ${step.phase}`);
    el('title', {}, point, `step ${i}: ${step.phase}, ${step.tokens} tokens, ${format(step.intensity)} FLOP/byte, ${format(step.gflop_per_s)} GFLOP/s`);
  });
  el('rect', { x: box.left + 10, y: box.top + 4, width: 10, height: 10, fill: 'var(--prefill)' }, svg);
  el('text', { x: box.left + 24, y: box.top + 13 }, svg, 'prefill');
  el('circle', { cx: box.left + 84, cy: box.top + 9, r: 4, fill: 'var(--decode)' }, svg);
  el('text', { x: box.left + 92, y: box.top + 13 }, svg, 'decode steps');
  const cursor = el('circle', { class: 'cursor', r: 10, fill: 'none', stroke: 'var(--rejected)', 'stroke-width': 3, visibility: 'hidden' }, svg);
  return (i) => {
    const step = data.steps[i];
    cursor.setAttribute('cx', x(step.intensity));
    cursor.setAttribute('cy', y(Math.max(step.gflop_per_s, yLo)));
    cursor.setAttribute('visibility', 'visible');
  };
}

function fillTable(data) {
  const body = document.querySelector('#trace-table tbody');
  body.replaceChildren();
  data.steps.forEach((s, i) => {
    const row = document.createElement('tr');
    row.className = s.phase;
    const cells = [i, s.phase, s.tokens, (s.weight_bytes / 1e6).toFixed(3), (s.flops / 1e6).toFixed(3), s.intensity.toFixed(2),
      s.gb_per_s.toFixed(2), s.gflop_per_s.toFixed(2), (s.seconds * 1000).toFixed(3)];
    for (const value of cells) {
      const cell = document.createElement('td');
      cell.textContent = String(value);
      row.append(cell);
    }
    body.append(row);
  });
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
}

function summarize(data) {
  const prefill = data.steps[0];
  const decodes = data.steps.slice(1);
  const meanIntensity = decodes.length ? decodes.reduce((s, d) => s + d.intensity, 0) / decodes.length : 0;
  const decodeSeconds = decodes.reduce((s, d) => s + d.seconds, 0);
  const roofShare = decodes.length ? median(decodes.map((d) => d.gb_per_s)) / data.machine.read_gb_per_s : 0;
  $('trace-summary').replaceChildren();
  const parts = [
    ['Steps', data.steps.length, 'trace-step-count'],
    ['prefill tokens', prefill.tokens, 'trace-prefill-tokens'],
    ['prefill intensity', `${prefill.intensity.toFixed(2)} FLOP/byte`, 'trace-prefill-intensity'],
    ['decode intensity (mean)', `${meanIntensity.toFixed(2)} FLOP/byte`, 'trace-decode-intensity'],
    ['decode speed', `${decodes.length && decodeSeconds > 0 ? (decodes.length / decodeSeconds).toFixed(1) : '–'} tok/s`, 'trace-decode-speed'],
    ['decode bandwidth (median)', `${(roofShare * 100).toFixed(0)}% of the memory roof`, 'trace-roof-share'],
    ['machine', `${format(data.machine.read_gb_per_s)} GB/s, ${format(data.machine.gflop_per_s)} GFLOP/s`, 'trace-machine'],
  ];
  for (const [label, value, id] of parts) {
    const span = document.createElement('span');
    span.append(`${label}: `);
    const strong = document.createElement('strong');
    strong.id = id;
    strong.textContent = String(value);
    span.append(strong, '. ');
    $('trace-summary').append(span);
  }
  $('trace-roof-share').dataset.share = String(roofShare);
}

function readout(step, i, machine) {
  const loaded = step.weight_bytes + step.kv_bytes;
  return `Step ${i} (${step.phase}, ${step.tokens} token${step.tokens === 1 ? '' : 's'}): loaded ${format(loaded / 1e6)} MB ` +
    `(${format(step.weight_bytes / 1e6)} MB weights + ${format(step.kv_bytes / 1e6)} MB KV) for ${format(step.flops / 1e6)} MFLOP ` +
    `= ${step.intensity.toFixed(2)} FLOP/byte; ${format(step.gb_per_s)} GB/s, ${((step.gb_per_s / machine.read_gb_per_s) * 100).toFixed(0)}% of the memory roof.`;
}

export function setupRooflinePanel() {
  let data = null, moveCursor = null, stop = () => {};
  const playButton = $('play-trace');
  $('run-trace').addEventListener('click', (event) => whileBusy(event.currentTarget, async () => {
    stop();
    const maxTokens = Math.round(Number($('trace-tokens').value)) || 32;
    data = await postJson('/explain/trace', { context: $('context').value, max_tokens: maxTokens });
    summarize(data);
    moveCursor = drawRoofline($('roofline-chart'), data);
    drawBytesChart($('bytes-chart'), data.steps, data.steps.length - 1);
    fillTable(data);
    $('play-readout').textContent = '';
    playButton.disabled = false;
  }));
  playButton.addEventListener('click', () => {
    if (!data) return;
    stop();
    document.body.dataset.playState = 'playing';
    const steps = data.steps, machine = data.machine;
    stop = play(steps, (i) => {
      moveCursor(i);
      drawBytesChart($('bytes-chart'), steps, i);
      $('play-readout').textContent = readout(steps[i], i, machine);
      document.body.dataset.playStep = String(i);
    }, () => { document.body.dataset.playState = 'done'; });
  });
}
