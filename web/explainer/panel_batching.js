// Panel 4: throughput and latency per batch size, measured on demand in the background (with
// progress), cached by the server; the knee marked; a batch-size control reads off one point.
import { getJson, postJson, showError, whileBusy } from './api.js';
import { axes, el, format, linear, newSvg, niceTicks } from './charts.js';

function $(id) { return document.getElementById(id); }

function drawCurves(container, status, picked) {
  const width = 760, height = 340, box = { left: 70, top: 24, right: 690, bottom: 290 };
  const svg = newSvg(container, width, height);
  const points = status.points;
  const sizes = status.batch_sizes;
  const x = linear(Math.log2(sizes[0]), Math.log2(sizes[sizes.length - 1]) || 1, box.left, box.right);
  const xAt = (batch) => x(Math.log2(batch));
  const maxRate = Math.max(...points.map((p) => p.gen_tok_s), 1), maxLatency = Math.max(...points.map((p) => p.tpot_ms), 1e-3);
  const y = linear(0, maxRate * 1.1, box.bottom, box.top), yLatency = linear(0, maxLatency * 1.1, box.bottom, box.top);
  axes(svg, box, { xTicks: sizes, yTicks: niceTicks(maxRate * 1.1, 4), x: xAt, y, xLabel: 'batch size (log scale)',
    yLabel: 'generated tokens/s' });
  for (const t of niceTicks(maxLatency * 1.1, 4)) el('text', { x: box.right + 6, y: yLatency(t) + 4, fill: 'var(--rejected)' }, svg, format(t));
  el('text', { x: box.right - 4, y: box.top - 8, 'text-anchor': 'end', fill: 'var(--rejected)' }, svg, 'ms per output token (right)');
  const line = (values, scale, color, cls) => {
    el('polyline', { class: cls, fill: 'none', stroke: color, 'stroke-width': 2,
      points: points.map((p) => `${xAt(p.batch)},${scale(values(p))}`).join(' ') }, svg);
    for (const p of points) el('circle', { cx: xAt(p.batch), cy: scale(values(p)), r: p.batch === picked ? 6 : 3.5, fill: color }, svg);
  };
  line((p) => p.gen_tok_s, y, 'var(--accent)', 'throughput');
  line((p) => p.tpot_ms, yLatency, 'var(--rejected)', 'latency');
  if (status.knee) {
    el('line', { class: 'knee', x1: xAt(status.knee), x2: xAt(status.knee), y1: box.top, y2: box.bottom, stroke: '#4a5360',
      'stroke-dasharray': '5,4' }, svg);
    el('text', { x: xAt(status.knee) + 4, y: box.top + 14 }, svg, `knee: batch ${status.knee}`);
  }
}

export function setupBatchingPanel() {
  let status = null;
  let polling = null;
  const pick = $('batch-pick');

  function render() {
    const done = status.points.length;
    $('batch-progress').max = Math.max(1, status.total);
    $('batch-progress').value = done;
    $('batch-status').textContent = status.state === 'running' ? `measuring… ${done} of ${status.total} batch sizes`
      : status.state === 'done' ? `done${status.cached ? ' (cached)' : ''}: ${status.total} batch sizes`
      : status.state === 'failed' ? `failed: ${status.error}` : '';
    if (!status.points.length) return;
    pick.disabled = false;
    pick.max = String(status.points.length - 1);
    if (Number(pick.value) > status.points.length - 1) pick.value = pick.max;
    const point = status.points[Number(pick.value)];
    $('batch-pick-value').textContent = String(point.batch);
    const side = !status.knee ? '' : point.batch < status.knee ? ' Below the knee: the hardware has room to spare.'
      : point.batch > status.knee ? ' Above the knee: more requests mostly add latency.' : ' At the knee.';
    $('batch-summary').replaceChildren();
    const parts = [['batch', point.batch, 'batch-point-size'], ['throughput', `${point.gen_tok_s.toFixed(1)} tok/s`, 'batch-point-throughput'],
      ['latency', `${point.tpot_ms.toFixed(3)} ms/token`, 'batch-point-latency'], ['time to first token', `${point.ttft_ms.toFixed(2)} ms`, 'batch-point-ttft'],
      ['knee', status.knee ?? '–', 'batch-knee']];
    for (const [label, value, id] of parts) {
      const strong = document.createElement('strong');
      strong.id = id;
      strong.textContent = String(value);
      $('batch-summary').append(`${label}: `, strong, '. ');
    }
    $('batch-summary').append(side);
    drawCurves($('batching-chart'), status, point.batch);
  }

  async function poll() {
    try {
      status = await getJson('/explain/batching');
      render();
      if (status.state === 'running') polling = setTimeout(poll, 400);
      else document.body.dataset.batchingState = status.state;
    } catch (error) {
      showError(error);
    }
  }

  pick.addEventListener('input', () => status && render());
  $('run-batching').addEventListener('click', (event) => whileBusy(event.currentTarget, async () => {
    clearTimeout(polling);
    delete document.body.dataset.batchingState;
    const sizes = $('batch-sizes').value.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
    status = await postJson('/explain/batching', { batch_sizes: sizes, prompt_tokens: Math.round(Number($('batch-prompt').value)),
      gen_tokens: Math.round(Number($('batch-gen').value)) });
    render();
    if (status.state === 'running') polling = setTimeout(poll, 400);
    else document.body.dataset.batchingState = status.state;
  }));
}
