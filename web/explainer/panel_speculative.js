// Panel 3: speculative decoding pass by pass on the speed model, the measured speedup, and the
// formula curves under the α / γ / c sliders (speculative_theory.js) with each proposer's measured point.
import { postJson, whileBusy } from './api.js';
import { format, showToken } from './charts.js';
import { setupTheory } from './speculative_theory.js';

function $(id) { return document.getElementById(id); }

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
  const addMeasured = setupTheory();
  const select = $('proposer');
  const names = { ngram: 'n-gram lookup', self: `self (${Math.max(1, info.speed_model.n_layer - 1)} of ${info.speed_model.n_layer} layers)`, draft: 'draft model' };
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
      ['c', data.cost_ratio.toFixed(3), 'spec-cost'],
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
    addMeasured(data);
  }));
}
