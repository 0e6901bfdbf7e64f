// Panel 1, degeneration measured: greedy, beam search and sampling continue the same context;
// each output with its repetition measures (computed by the engine on its tokens).
import { postJson, whileBusy } from './api.js';

function $(id) { return document.getElementById(id); }

const LABELS = { greedy: 'Greedy', beam: 'Beam search', sampling: 'Sampling (current knobs)' };

function measureRow(list, label, value, id) {
  const term = document.createElement('dt');
  term.textContent = label;
  const detail = document.createElement('dd');
  detail.id = id;
  detail.textContent = value;
  list.append(term, detail);
}

// The output's tokens, with both occurrences of the longest repeated span marked.
function markedText(pieces, r) {
  const first = r.loop_start, second = r.loop_start + r.loop_period, length = r.longest_loop;
  const inSpan = (i) => length > 0 && ((i >= first && i < first + length) || (i >= second && i < second + length));
  const nodes = [];
  let run = '', marked = false;
  const flush = () => {
    if (!run) return;
    if (marked) {
      const mark = document.createElement('mark');
      mark.textContent = run;
      nodes.push(mark);
    } else {
      nodes.push(document.createTextNode(run));
    }
    run = '';
  };
  pieces.forEach((piece, i) => {
    if (inSpan(i) !== marked) {
      flush();
      marked = inSpan(i);
    }
    run += piece;
  });
  flush();
  return nodes;
}

function outputCard(output, numBeams) {
  const card = document.createElement('article');
  card.className = `output ${output.method}`;
  card.dataset.method = output.method;
  card.dataset.repeated4gramShare = String(output.repetition.repeated_4gram_share);
  const title = document.createElement('h4');
  title.textContent = output.method === 'beam' ? `${LABELS.beam} (width ${numBeams})` : LABELS[output.method];
  const measures = document.createElement('dl');
  measures.className = 'measures';
  const r = output.repetition;
  measureRow(measures, 'repeated 4-grams', `${(r.repeated_4gram_share * 100).toFixed(1)}%`, `degeneration-${output.method}-rep4`);
  measureRow(measures, 'distinct-2', r.distinct_2.toFixed(3), `degeneration-${output.method}-distinct2`);
  measureRow(measures, 'longest repeated span', r.longest_loop ? `${r.longest_loop} tokens, recurring ${r.loop_period} later` : 'none',
    `degeneration-${output.method}-loop`);
  measureRow(measures, 'tokens', String(r.num_tokens), `degeneration-${output.method}-tokens`);
  const text = document.createElement('p');
  text.className = 'texts';
  text.append(...markedText(output.pieces, r));
  card.append(title, measures, text);
  return card;
}

export function setupDegenerationPanel(samplingSettings) {
  $('run-degeneration').addEventListener('click', (event) => whileBusy(event.currentTarget, async () => {
    const numBeams = Math.round(Number($('degeneration-beams').value)) || 4;
    const data = await postJson('/explain/degeneration', { ...samplingSettings(),
      max_tokens: Math.round(Number($('degeneration-tokens').value)) || 256, num_beams: numBeams });
    $('degeneration-outputs').replaceChildren(...data.outputs.map((output) => outputCard(output, data.num_beams)));
  }));
}
