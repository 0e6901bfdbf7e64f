// The explainer page: reads the model facts, then wires the four panels.
import { getJson, showError } from './api.js';
import { setupBatchingPanel } from './panel_batching.js';
import { setupDistributionPanel } from './panel_distribution.js';
import { setupRooflinePanel } from './panel_roofline.js';
import { setupSpeculativePanel } from './panel_speculative.js';

async function main() {
  const info = await getJson('/explain/info');
  document.getElementById('model-facts').textContent =
    `Model: ${info.n_layer} layers, vocabulary ${info.n_vocab}, context ${info.n_ctx}; ${info.n_threads} thread(s).`;
  setupRooflinePanel();
  setupSpeculativePanel(info);
  setupBatchingPanel();
  await setupDistributionPanel(info);
  document.body.dataset.ready = 'true';
}

main().catch(showError);
