// Panel 3: speculative decoding pass by pass, the measured speedup, and the theoretical curve.
import { postJson, whileBusy } from './api.js';
import { axes, el, format, linear, newSvg, niceTicks, showToken } from './charts.js';

function $(id) { return document.getElementById(id); }

function drawSpeedup(container, data) {
  const width = 520, height = 320, box = { left: 60, top: 20, right: 505, bottom: 270 };
  const svg = newSvg(container, width, height);
  const yMax = Math.max(...data.theory.map((p) => p.speedup), data.measured_speedup, 1) * 1.1;
  const x = linear(0, 1, box.left, box.right), y = linear(0, yMax, box.bottom, box.top);
  axes(svg, box, { xTicks: [0, 0.25, 0.5, 0.75, 1], yTicks: niceTicks(yMax, 4), x, y,
    xLabel: 'acceptance rate α', yLabel: 'speedup over plain decoding' });
  el('line', { x1: box.left, x2: box.right, y1: y(1), y2: y(1), stroke: '#4a5360', 'stroke-dasharray': '4,3' }, svg);
  el('polyline', { class: 'theory', fill: 'none', stroke: 'var(--accent)', 'stroke-width': 2,
    points: data.theory.map((p) => `${x(p.alpha)},${y(p.speedup)}`).join(' ') }, svg);
  el('text', { x: box.left + 8, y: box.top + 12, fill: 'var(--accent)' }, svg,
    `theory: (1 − α^(γ+1)) / ((1 − α)(γc + 1)), γ = ${data.gamma}, c = ${data.cost_ratio.toFixed(3)}`);
  const point = el('circle', { class: 'measured', cx: x(data.alpha), cy: y(data.measured_speedup), r: 6, fill: 'var(--corrected)',
    stroke: '#1b1f24' }, svg);
  el('title', {}, point, `measured: α = ${data.alpha.toFixed(3)}, speedup ${data.measured_speedup.toFixed(2)}×`);
  el('text', { x: Math.min(x(data.alpha) + 10, box.right - 120), y: y(data.measured_speedup) - 8 }, svg,
    `measured ${data.measured_speedup.toFixed(2)}×`);
}

function listPasses(data) {
  const list = $('spec-passes');
  list.replaceChildren();
  for (const pass of data.passes) {
    const item = document.createElement('li');
    for (const token of pass.tokens) {
      const chip = document.createElement('span');
      chip.className = `chip ${token.status}`;
      chip.textContent = showToken(token.text);
      chip.title = `${token.status}: ${JSON.stringify(token.text)} (id ${token.id})`;
      item.append(chip);
    }
    const alpha = document.createElement('span');
    alpha.className = 'alpha';
    alpha.textContent = ` ${pass.accepted}/${pass.drafted} kept · α so far ${pass.running_alpha.toFixed(2)}`;
    item.append(alpha);
    list.append(item);
  }
}

export function setupSpeculativePanel(info) {
  const select = $('proposer');
  const names = { ngram: 'n-gram lookup', self: `self (${Math.max(1, info.n_layer - 1)} of ${info.n_layer} layers)`, draft: 'draft model' };
  for (const proposer of info.proposers) {
    const option = document.createElement('option');
    option.value = proposer;
    option.textContent = names[proposer] || proposer;
    select.append(option);
  }
  $('run-speculative').addEventListener('click', (event) => whileBusy(event.currentTarget, async () => {
    const data = await postJson('/explain/speculative', {
      context: $('context').value, proposer: select.value, gamma: Math.round(Number($('gamma').value)),
      max_tokens: Math.round(Number($('spec-tokens').value)), temperature: Number($('spec-temperature').value),
    });
    const summary = $('spec-summary');
    summary.replaceChildren();
    const parts = [
      ['proposer', data.proposer, 'spec-proposer'],
      ['passes', data.passes.length, 'spec-pass-count'],
      ['α', data.alpha.toFixed(3), 'spec-alpha'],
      ['tokens per pass', data.tokens_per_pass.toFixed(2), 'spec-tokens-per-pass'],
      ['measured speedup', `${data.measured_speedup.toFixed(2)}×`, 'spec-speedup'],
      ['time', `${format(data.speculative_seconds * 1000)} ms vs ${format(data.plain_seconds * 1000)} ms plain`, 'spec-times'],
    ];
    for (const [label, value, id] of parts) {
      const strong = document.createElement('strong');
      strong.id = id;
      strong.textContent = String(value);
      summary.append(`${label}: `, strong, '. ');
    }
    listPasses(data);
    drawSpeedup($('speedup-chart'), data);
  }));
}
