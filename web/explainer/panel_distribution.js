// Panel 1: the next-token distribution under the sampling knobs, live; Sample, Resample, Greedy, Beam.
import { postJson, showError, whileBusy } from './api.js';
import { axes, el, format, linear, newSvg, niceTicks, showToken } from './charts.js';

const KNOBS = ['temperature', 'top-k', 'top-p', 'min-p'];

function $(id) { return document.getElementById(id); }

// The context and knobs as the endpoints take them (panel 1's degeneration comparison uses them too).
export function samplingSettings() {
  return {
    context: $('context').value,
    temperature: Number($('temperature').value),
    top_k: Math.round(Number($('top-k').value)),
    top_p: Number($('top-p').value),
    min_p: Number($('min-p').value),
  };
}

function drawBars(container, data) {
  const tokens = data.tokens;
  const rowHeight = 18, left = 110, right = 70, top = 24, width = 760;
  const height = top + tokens.length * rowHeight + 40;
  const svg = newSvg(container, width, height);
  const maxProb = Math.max(...tokens.map((t) => Math.max(t.raw_prob, t.prob)), 1e-9);
  const x = linear(0, maxProb, left, width - right);
  const box = { left, top, right: width - right, bottom: top + tokens.length * rowHeight };
  axes(svg, box, { xTicks: niceTicks(maxProb, 4), yTicks: [], x, y: () => 0, xLabel: 'probability',
    xFormat: (v) => format(v, 2) });
  tokens.forEach((token, i) => {
    const yTop = top + i * rowHeight + 2, h = rowHeight - 5;
    const g = el('g', { class: 'bar', 'data-id': token.id, 'data-kept': token.kept, 'data-prob': token.prob,
      'data-raw-prob': token.raw_prob }, svg);
    el('text', { x: left - 6, y: yTop + h - 2, 'text-anchor': 'end', 'font-family': 'monospace' }, g, showToken(token.text));
    if (token.kept) {
      el('rect', { class: 'solid', x: left, y: yTop, width: Math.max(0, x(token.prob) - left), height: h, fill: 'var(--kept)' }, g);
    } else {
      el('rect', { class: 'trimmed', x: left, y: yTop, width: Math.max(0, x(token.raw_prob) - left), height: h,
        fill: 'var(--trimmed)', 'fill-opacity': 0.55 }, g);
    }
    el('rect', { class: 'raw', x: left, y: yTop, width: Math.max(0.5, x(token.raw_prob) - left), height: h, fill: 'none',
      stroke: 'var(--raw)', 'stroke-width': 1, 'stroke-dasharray': '3,2' }, g);
    const label = token.kept ? `${(token.prob * 100).toFixed(1)}%` : `trimmed (${(token.raw_prob * 100).toFixed(1)}%)`;
    el('text', { x: Math.max(x(token.prob), x(token.raw_prob)) + 4, y: yTop + h - 2 }, g, label);
    el('title', {}, g, `${JSON.stringify(token.text)}: raw ${(token.raw_prob * 100).toFixed(2)}%, after sampling ${(token.prob * 100).toFixed(2)}%`);
  });
  const legend = el('g', {}, svg);
  el('rect', { x: left, y: 6, width: 12, height: 10, fill: 'var(--kept)' }, legend);
  el('text', { x: left + 16, y: 15 }, legend, 'kept (renormalized)');
  el('rect', { x: left + 150, y: 6, width: 12, height: 10, fill: 'none', stroke: 'var(--raw)', 'stroke-dasharray': '3,2' }, legend);
  el('text', { x: left + 166, y: 15 }, legend, 'raw');
  el('rect', { x: left + 210, y: 6, width: 12, height: 10, fill: 'var(--trimmed)', 'fill-opacity': 0.55 }, legend);
  el('text', { x: left + 226, y: 15 }, legend, 'trimmed');
}

export function setupDistributionPanel(info) {
  let latestRequest = 0;
  let renders = 0;
  let timer = null;

  async function refresh() {
    const request = ++latestRequest;
    try {
      const data = await postJson('/explain/distribution', samplingSettings());
      if (request !== latestRequest) return;  // a newer request is on its way
      showError(null);
      drawBars($('distribution-chart'), data);
      $('kept-count').textContent = String(data.kept_count);
      $('kept-mass').textContent = `${(data.kept_mass * 100).toFixed(1)}%`;
      document.body.dataset.distributionRenders = String(++renders);
    } catch (error) {
      if (request === latestRequest) showError(error);
    }
  }
  function scheduleRefresh() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 80);
  }

  for (const name of KNOBS) {
    const number = $(name), range = $(`${name}-range`);
    range.addEventListener('input', () => { number.value = range.value; scheduleRefresh(); });
    number.addEventListener('input', () => { range.value = number.value; scheduleRefresh(); });
  }
  $('context').addEventListener('input', scheduleRefresh);

  $('sample').addEventListener('click', (event) => whileBusy(event.currentTarget, async () => {
    const data = await postJson('/explain/sample', samplingSettings());
    $('context').value = data.context;
    $('last-sample').textContent = `Sampled ${JSON.stringify(data.token.text)} (id ${data.token.id}).`;
    await refresh();
  }));
  $('resample').addEventListener('click', (event) => whileBusy(event.currentTarget, async () => {
    const data = await postJson('/explain/resample', { ...samplingSettings(), max_tokens: 48 });
    const item = document.createElement('li');
    const s = samplingSettings();
    item.textContent = `[T=${s.temperature}, k=${s.top_k}, p=${s.top_p}, min-p=${s.min_p}] ${data.text}`;
    $('resample-list').prepend(item);
    while ($('resample-list').children.length > 6) $('resample-list').lastElementChild.remove();
  }));
  const continuations = (beamsOnly) => async () => {
    const numBeams = Math.round(Number($('num-beams').value)) || 3;
    const data = await postJson('/explain/continuations', { context: $('context').value, max_tokens: 24, num_beams: numBeams });
    const list = $('continuation-list');
    list.replaceChildren();
    const add = (label, text) => {
      const p = document.createElement('p');
      const strong = document.createElement('span');
      strong.className = 'label';
      strong.textContent = `${label}: `;
      p.append(strong, text);
      list.append(p);
    };
    if (!beamsOnly) add('greedy', data.greedy.text);
    data.beams.forEach((beam, i) => add(`beam ${i + 1} (score ${beam.score.toFixed(3)})`, beam.text));
    if (beamsOnly) add('greedy', data.greedy.text);
  };
  $('greedy').addEventListener('click', (event) => whileBusy(event.currentTarget, continuations(false)));
  $('beam').addEventListener('click', (event) => whileBusy(event.currentTarget, continuations(true)));

  $('context').value = info.default_context;
  return refresh();
}
