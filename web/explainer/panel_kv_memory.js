// Panel 4, paged KV memory: the engine's block pool filled with requests of the given lengths
// (each block coloured by its request, its used part solid), beside contiguous max-length
// reservations of the same bytes.
import { postJson, whileBusy } from './api.js';
import { el, format, newSvg } from './charts.js';

function $(id) { return document.getElementById(id); }

const COLORS = ['#0b5cad', '#a15c00', '#1e7b34', '#5b3ea8', '#b3261e', '#4a5360', '#00707a', '#8a3b72'];

function drawBlocks(container, data) {
  const width = 760, columns = Math.min(64, Math.max(8, Math.ceil(Math.sqrt(data.num_blocks * 4))));
  const cell = Math.floor((width - 20) / columns), rows = Math.ceil(data.num_blocks / columns);
  const pagedTop = 24, pagedBottom = pagedTop + rows * cell;
  const contiguousTop = pagedBottom + 40, barHeight = 18;
  const height = contiguousTop + Math.max(1, data.contiguous.requests) * (barHeight + 4) + 40;
  const svg = newSvg(container, width, height);
  el('text', { x: 10, y: 16 }, svg, `paged: ${data.paged.requests} requests in ${data.num_blocks} blocks of ${data.block_size} tokens ` +
    `(${format(data.bytes_per_block)}B each)`);
  data.paged.block_owner.forEach((owner, b) => {
    const x = 10 + (b % columns) * cell, y = pagedTop + Math.floor(b / columns) * cell;
    if (owner < 0) {
      el('rect', { class: 'block free', x, y, width: cell - 1, height: cell - 1, fill: 'none', stroke: '#c9d0d8' }, svg);
      return;
    }
    const color = COLORS[owner % COLORS.length], used = data.paged.block_fill[b] / data.block_size;
    const g = el('g', { class: 'block used', 'data-owner': owner }, svg);
    el('rect', { x, y, width: cell - 1, height: cell - 1, fill: color, 'fill-opacity': 0.25 }, g);
    el('rect', { x, y, width: Math.max(0.5, (cell - 1) * used), height: cell - 1, fill: color }, g);
    el('title', {}, g, `block ${b}: request ${owner + 1}, ${data.paged.block_fill[b]} of ${data.block_size} positions used`);
  });
  const capacity = data.num_blocks * data.block_size;
  el('text', { x: 10, y: contiguousTop - 8 }, svg, `contiguous: ${data.contiguous.requests} requests, each reserving ` +
    `${data.max_model_len} positions of the same ${capacity}`);
  const scale = (width - 20) / capacity;
  for (let r = 0; r < data.contiguous.requests; ++r) {
    const length = data.lengths[r % data.lengths.length], y = contiguousTop + r * (barHeight + 4);
    const g = el('g', { class: 'reservation' }, svg);
    el('rect', { x: 10, y, width: data.max_model_len * scale, height: barHeight, fill: COLORS[r % COLORS.length], 'fill-opacity': 0.25 }, g);
    el('rect', { x: 10, y, width: length * scale, height: barHeight, fill: COLORS[r % COLORS.length] }, g);
    el('title', {}, g, `request ${r + 1}: ${length} tokens used of ${data.max_model_len} reserved`);
  }
}

export function setupKvMemoryPanel() {
  $('run-kv-memory').addEventListener('click', (event) => whileBusy(event.currentTarget, async () => {
    const lengths = $('kv-lengths').value.split(',').map((v) => v.trim()).filter(Boolean).map(Number);
    const data = await postJson('/explain/kv_memory', { lengths, kv_cache_mib: Math.round(Number($('kv-mib').value)) || 64 });
    const line = $('kv-summary');
    line.replaceChildren();
    const paged = document.createElement('strong');
    paged.id = 'kv-paged-requests';
    paged.textContent = String(data.paged.requests);
    const contiguous = document.createElement('strong');
    contiguous.id = 'kv-contiguous-requests';
    contiguous.textContent = String(data.contiguous.requests);
    const waste = data.paged.tokens ? data.paged.wasted_tokens / (data.paged.tokens + data.paged.wasted_tokens) : 0;
    const reserved = data.contiguous.reserved_tokens ? 1 - data.contiguous.tokens / data.contiguous.reserved_tokens : 0;
    line.append(`In ${format(data.kv_cache_bytes / 2 ** 20)} MiB: paged blocks fit `, paged, ' requests (', `${(waste * 100).toFixed(1)}%`,
      ' of their blocks empty); contiguous max-length allocation fits ', contiguous, ` (${(reserved * 100).toFixed(1)}% of the reservations empty).`);
    drawBlocks($('kv-chart'), data);
  }));
}
