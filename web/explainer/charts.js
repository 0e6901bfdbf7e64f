// Small SVG drawing helpers shared by the panels: elements, scales, axes. No dependencies.
const SVG_NS = 'http://www.w3.org/2000/svg';

export function el(tag, attrs = {}, parent = null, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

// A fresh <svg> with a viewBox of width × height filling `container`.
export function newSvg(container, width, height) {
  container.replaceChildren();
  return el('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'xMidYMid meet' }, container);
}

export function linear(d0, d1, r0, r1) {
  const span = d1 - d0 || 1;
  return (v) => r0 + ((v - d0) / span) * (r1 - r0);
}

export function log10Scale(d0, d1, r0, r1) {
  const a = Math.log10(d0), b = Math.log10(d1);
  return (v) => r0 + ((Math.log10(Math.max(v, 1e-300)) - a) / (b - a || 1)) * (r1 - r0);
}

// Powers of ten covering [lo, hi].
export function decades(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); ++e) out.push(10 ** e);
  return out;
}

// About `count` round ticks over [0, max].
export function niceTicks(max, count = 4) {
  if (!(max > 0)) return [0];
  const raw = max / count, magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  const ticks = [];
  for (let v = 0; v <= max * 1.0001; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

// Numbers as people read them: 1.23 k, 45.6 M, 0.012.
export function format(value, digits = 3) {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  const abs = Math.abs(value);
  const units = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [scale, unit] of units) if (abs >= scale) return `${Number((value / scale).toPrecision(digits))} ${unit}`;
  if (abs === 0) return '0';
  return String(Number(value.toPrecision(digits)));
}

// Axes with ticks and labels inside a plot box {left, top, right, bottom} (pixel edges).
export function axes(svg, box, { xTicks, yTicks, x, y, xLabel, yLabel, xFormat = format, yFormat = format }) {
  for (const t of yTicks) {
    el('line', { x1: box.left, x2: box.right, y1: y(t), y2: y(t), class: 'grid' }, svg);
    el('text', { x: box.left - 6, y: y(t) + 4, 'text-anchor': 'end' }, svg, yFormat(t));
  }
  for (const t of xTicks) el('text', { x: x(t), y: box.bottom + 16, 'text-anchor': 'middle' }, svg, xFormat(t));
  el('line', { x1: box.left, x2: box.right, y1: box.bottom, y2: box.bottom, class: 'axis' }, svg);
  el('line', { x1: box.left, x2: box.left, y1: box.top, y2: box.bottom, class: 'axis' }, svg);
  if (xLabel) el('text', { x: (box.left + box.right) / 2, y: box.bottom + 34, 'text-anchor': 'middle' }, svg, xLabel);
  if (yLabel) {
    el('text', { x: 14, y: (box.top + box.bottom) / 2, 'text-anchor': 'middle',
      transform: `rotate(-90 14 ${(box.top + box.bottom) / 2})` }, svg, yLabel);
  }
}

// A visible token: spaces and newlines shown, so " the" and "the" differ on screen.
export function showToken(text) {
  if (text === '') return '∅';
  return text.replace(/\n/g, '⏎').replace(/^ /, '␣');
}
