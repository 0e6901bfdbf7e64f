// Panel 2's "press play": the traced generation replayed step by step. Per step, the bytes loaded
// (every weight, plus the KV cache read growing with the context) beside the useful FLOPs, and the
// step's point on the roofline (drawn by panel_roofline.js, moved here through `onStep`). The
// prefill is one wide step; decode steps load the same weights for a single token's math.
import { axes, el, format, linear, newSvg, niceTicks } from './charts.js';

const PREFILL_SLOTS = 4;  // the prefill's width in decode-step widths
const FRAME_MS = 140;

// Draws the bars of steps [0, upto]; later steps as faint outlines of what is to come.
export function drawBytesChart(container, steps, upto) {
  const width = 520, height = 350, box = { left: 64, top: 44, right: 456, bottom: 300 };
  const svg = newSvg(container, width, height);
  const slots = steps.reduce((n, s) => n + (s.phase === 'prefill' ? PREFILL_SLOTS : 1), 0);
  const maxBytes = Math.max(...steps.map((s) => s.weight_bytes + s.kv_bytes)) / 1e6;
  const maxFlops = Math.max(...steps.map((s) => s.flops)) / 1e6;
  const x = linear(0, slots, box.left, box.right);
  const yBytes = linear(0, maxBytes * 1.1, box.bottom, box.top), yFlops = linear(0, maxFlops * 1.1, box.bottom, box.top);
  axes(svg, box, { xTicks: [], yTicks: niceTicks(maxBytes * 1.1, 4), x, y: yBytes, yLabel: 'MB loaded' });
  for (const t of niceTicks(maxFlops * 1.1, 4)) el('text', { x: box.right + 6, y: yFlops(t) + 4 }, svg, format(t));
  el('text', { x: box.right + 4, y: box.top - 8, 'text-anchor': 'end' }, svg, 'useful MFLOP (right)');
  el('text', { x: (box.left + box.right) / 2, y: box.bottom + 20, 'text-anchor': 'middle' }, svg, 'forward steps (prefill wide, then decode)');
  let slot = 0;
  steps.forEach((step, i) => {
    const w = step.phase === 'prefill' ? PREFILL_SLOTS : 1;
    const x0 = x(slot), span = x(slot + w) - x0, half = Math.max(0.5, span / 2 - 0.5);
    const shown = i <= upto;
    const g = el('g', { class: `step-bars ${step.phase}${shown ? ' shown' : ''}`, 'data-step': i }, svg);
    const weights = step.weight_bytes / 1e6, kv = step.kv_bytes / 1e6, flops = step.flops / 1e6;
    const fill = (color) => (shown ? { fill: color } : { fill: 'none', stroke: '#c9d0d8' });
    el('rect', { class: 'weights', x: x0, y: yBytes(weights), width: half, height: box.bottom - yBytes(weights), ...fill('var(--decode)') }, g);
    el('rect', { class: 'kv', x: x0, y: yBytes(weights + kv), width: half, height: yBytes(weights) - yBytes(weights + kv), ...fill('var(--bonus)') }, g);
    el('rect', { class: 'flops', x: x0 + half, y: yFlops(flops), width: half, height: Math.max(0.5, box.bottom - yFlops(flops)), ...fill('var(--prefill)') }, g);
    el('title', {}, g, `step ${i} (${step.phase}, ${step.tokens} tokens): ${format(weights)} MB weights + ${format(kv)} MB KV loaded, ${format(flops)} MFLOP`);
    slot += w;
  });
  const legend = [['var(--decode)', 'weights'], ['var(--bonus)', 'KV cache'], ['var(--prefill)', 'useful FLOPs']];
  legend.forEach(([color, label], i) => {
    el('rect', { x: box.left + 8 + i * 110, y: 6, width: 12, height: 10, fill: color }, svg);
    el('text', { x: box.left + 24 + i * 110, y: 15 }, svg, label);
  });
}

// Plays steps one frame at a time; `onStep(i)` redraws for step i. Returns stop().
export function play(steps, onStep, onDone) {
  let i = 0, timer = null;
  const frame = () => {
    onStep(i);
    if (i + 1 >= steps.length) {
      onDone();
      return;
    }
    timer = setTimeout(frame, steps[i].phase === 'prefill' ? FRAME_MS * PREFILL_SLOTS : FRAME_MS);
    ++i;
  };
  frame();
  return () => clearTimeout(timer);
}
