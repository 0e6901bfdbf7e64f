// Panel 4, continuous vs static batching: one measured timeline per schedule, rows = the batch's
// slots, bars = requests (labelled with their length), on one time axis so the lengths compare.
import { postJson, whileBusy } from './api.js';
import { axes, el, format, linear, newSvg, niceTicks } from './charts.js';

function $(id) { return document.getElementById(id); }

const COLORS = ['#0b5cad', '#a15c00', '#1e7b34', '#5b3ea8', '#b3261e', '#4a5360', '#00707a', '#8a3b72'];

function drawTimeline(container, run, maxBatch, maxSeconds, title) {
  const width = 520, rowHeight = 28, box = { left: 56, top: 30, right: 505, bottom: 30 + maxBatch * rowHeight };
  const svg = newSvg(container, width, box.bottom + 42);
  const x = linear(0, maxSeconds * 1000, box.left, box.right);
  const slotY = (slot) => box.top + slot * rowHeight;
  axes(svg, box, { xTicks: niceTicks(maxSeconds * 1000, 4), yTicks: [], x, y: () => 0, xLabel: 'time (ms)' });
  el('text', { x: box.left, y: 16 }, svg, title);
  for (let slot = 0; slot < maxBatch; ++slot) el('text', { x: box.left - 6, y: slotY(slot) + rowHeight / 2 + 4, 'text-anchor': 'end' }, svg, `slot ${slot + 1}`);
  run.requests.forEach((r, i) => {
    const x0 = x(r.admitted_seconds * 1000), x1 = x(r.finished_seconds * 1000);
    const g = el('g', { class: 'request', 'data-request': i }, svg);
    el('rect', { x: x0, y: slotY(r.slot) + 3, width: Math.max(1, x1 - x0 - 1), height: rowHeight - 6, fill: COLORS[i % COLORS.length], rx: 3 }, g);
    if (x1 - x0 > 18) el('text', { x: x0 + 4, y: slotY(r.slot) + rowHeight / 2 + 4, fill: '#ffffff' }, g, String(r.gen_tokens));
    el('title', {}, g, `request ${i + 1}: ${r.gen_tokens} tokens, slot ${r.slot + 1}, ${format(r.admitted_seconds * 1000)}–${format(r.finished_seconds * 1000)} ms`);
  });
  el('line', { class: 'end', x1: x(run.total_seconds * 1000), x2: x(run.total_seconds * 1000), y1: box.top - 6, y2: box.bottom,
    stroke: '#1b1f24', 'stroke-dasharray': '4,3' }, svg);
}

function summary(data) {
  const c = data.continuous, s = data.static;
  const line = $('sched-summary');
  line.replaceChildren();
  const parts = [
    ['continuous batching', `${format(c.total_seconds * 1000)} ms`, 'sched-continuous-total'],
    ['mean latency', `${format(c.mean_latency_seconds * 1000)} ms`, 'sched-continuous-latency'],
    ['slots busy', `${(c.mean_occupancy * 100).toFixed(0)}%`, 'sched-continuous-occupancy'],
    ['static batching', `${format(s.total_seconds * 1000)} ms`, 'sched-static-total'],
    ['mean latency', `${format(s.mean_latency_seconds * 1000)} ms`, 'sched-static-latency'],
    ['slots busy', `${(s.mean_occupancy * 100).toFixed(0)}%`, 'sched-static-occupancy'],
  ];
  for (const [label, value, id] of parts) {
    const strong = document.createElement('strong');
    strong.id = id;
    strong.textContent = value;
    line.append(`${label}: `, strong, '. ');
  }
  line.append(`Static batching takes ${(s.total_seconds / c.total_seconds).toFixed(2)}× as long (both measured).`);
}

export function setupSchedulesPanel() {
  $('run-schedules').addEventListener('click', (event) => whileBusy(event.currentTarget, async () => {
    const lengths = $('sched-lengths').value.split(',').map((v) => v.trim()).filter(Boolean).map(Number);
    const data = await postJson('/explain/schedules', { gen_lengths: lengths, max_batch: Math.round(Number($('sched-batch').value)) || 4 });
    const maxSeconds = Math.max(data.continuous.total_seconds, data.static.total_seconds);
    drawTimeline($('sched-continuous-chart'), data.continuous, data.max_batch, maxSeconds, 'continuous batching (measured)');
    drawTimeline($('sched-static-chart'), data.static, data.max_batch, maxSeconds, 'static batching (measured)');
    summary(data);
    document.body.dataset.schedules = 'done';
  }));
}
