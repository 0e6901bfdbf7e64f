// Panel 3, raise α: sliders for α, γ and c drive the formula curves (tokens per target pass and
// speedup over α, DESIGN.md's formulas, computed here); each proposer run adds its measured point.
import { axes, el, linear, newSvg, niceTicks } from './charts.js';

function $(id) { return document.getElementById(id); }

// Expected tokens per target pass (1 − α^(γ+1)) / (1 − α) and speedup that / (γc + 1).
export function tokensPerPass(alpha, gamma) {
  return alpha >= 1 ? gamma + 1 : (1 - alpha ** (gamma + 1)) / (1 - alpha);
}
export function speedup(alpha, gamma, cost) {
  return tokensPerPass(alpha, gamma) / (gamma * cost + 1);
}

function settings() {
  return { alpha: Number($('theory-alpha').value), gamma: Math.round(Number($('theory-gamma').value)), cost: Number($('theory-cost').value) };
}

function draw(container, measured) {
  const { alpha, gamma, cost } = settings();
  const width = 760, height = 320, box = { left: 60, top: 24, right: 740, bottom: 270 };
  const svg = newSvg(container, width, height);
  const yMax = Math.max(gamma + 1, ...measured.map((m) => Math.max(m.tokens_per_pass, m.measured_speedup))) * 1.05;
  const x = linear(0, 1, box.left, box.right), y = linear(0, yMax, box.bottom, box.top);
  axes(svg, box, { xTicks: [0, 0.25, 0.5, 0.75, 1], yTicks: niceTicks(yMax, 4), x, y, xLabel: 'acceptance rate α', yLabel: '× per target pass / over plain' });
  el('line', { x1: box.left, x2: box.right, y1: y(1), y2: y(1), stroke: '#4a5360', 'stroke-dasharray': '4,3' }, svg);
  const alphas = Array.from({ length: 101 }, (_, i) => i / 100);
  el('polyline', { class: 'theory tokens', fill: 'none', stroke: 'var(--accent)', 'stroke-width': 2,
    points: alphas.map((a) => `${x(a)},${y(tokensPerPass(a, gamma))}`).join(' ') }, svg);
  el('polyline', { class: 'theory speedup', fill: 'none', stroke: 'var(--corrected)', 'stroke-width': 2, 'stroke-dasharray': '6,3',
    points: alphas.map((a) => `${x(a)},${y(speedup(a, gamma, cost))}`).join(' ') }, svg);
  el('line', { class: 'alpha-marker', x1: x(alpha), x2: x(alpha), y1: box.top, y2: box.bottom, stroke: '#4a5360' }, svg);
  el('circle', { cx: x(alpha), cy: y(tokensPerPass(alpha, gamma)), r: 5, fill: 'var(--accent)' }, svg);
  el('circle', { cx: x(alpha), cy: y(speedup(alpha, gamma, cost)), r: 5, fill: 'var(--corrected)' }, svg);
  const legend = el('g', {}, svg);
  el('line', { x1: box.left + 10, x2: box.left + 34, y1: box.top + 8, y2: box.top + 8, stroke: 'var(--accent)', 'stroke-width': 2 }, legend);
  el('text', { x: box.left + 40, y: box.top + 12 }, legend, `tokens per pass (formula, γ = ${gamma})`);
  el('line', { x1: box.left + 10, x2: box.left + 34, y1: box.top + 26, y2: box.top + 26, stroke: 'var(--corrected)', 'stroke-width': 2,
    'stroke-dasharray': '6,3' }, legend);
  el('text', { x: box.left + 40, y: box.top + 30 }, legend, `speedup (formula, c = ${cost})`);
  for (const m of measured) {
    const point = el('circle', { class: 'measured', cx: x(m.alpha), cy: y(m.measured_speedup), r: 6, fill: 'var(--bonus)', stroke: '#1b1f24' }, svg);
    el('title', {}, point, `${m.proposer}: measured α ${m.alpha.toFixed(3)}, γ ${m.gamma}, c ${m.cost_ratio.toFixed(3)}, ` +
      `${m.tokens_per_pass.toFixed(2)} tokens per pass, speedup ${m.measured_speedup.toFixed(2)}×`);
    el('text', { x: Math.min(x(m.alpha) + 9, box.right - 150), y: y(m.measured_speedup) - 8 }, svg,
      `${m.proposer}: ${m.measured_speedup.toFixed(2)}× (measured)`);
  }
}

// Returns addMeasured(result of /explain/speculative): keeps the latest point per proposer.
export function setupTheory() {
  const measured = new Map();
  function update() {
    const { alpha, gamma, cost } = settings();
    $('theory-tokens-per-pass').textContent = tokensPerPass(alpha, gamma).toFixed(3);
    $('theory-speedup').textContent = `${speedup(alpha, gamma, cost).toFixed(3)}×`;
    draw($('theory-chart'), [...measured.values()]);
  }
  for (const name of ['theory-alpha', 'theory-gamma', 'theory-cost']) {
    const number = $(name), range = $(`${name}-range`);
    range.addEventListener('input', () => { number.value = range.value; update(); });
    number.addEventListener('input', () => { range.value = number.value; update(); });
  }
  update();
  // A run sets γ and c to its own, so its measured point reads against its own curve.
  return (result) => {
    measured.set(result.proposer, result);
    for (const [name, value] of [['theory-gamma', result.gamma], ['theory-cost', Number(result.cost_ratio.toFixed(3))]]) {
      $(name).value = String(value);
      $(`${name}-range`).value = String(value);
    }
    update();
  };
}
