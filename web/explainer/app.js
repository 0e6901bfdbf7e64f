// The explainer page: reads the model facts, then wires the four panels.
import { getJson, showError } from './api.js';
import { format } from './charts.js';
import { setupBatchingPanel } from './panel_batching.js';
import { setupDegenerationPanel } from './panel_degeneration.js';
import { samplingSettings, setupDistributionPanel } from './panel_distribution.js';
import { setupKvMemoryPanel } from './panel_kv_memory.js';
import { setupRooflinePanel } from './panel_roofline.js';
import { setupSchedulesPanel } from './panel_schedules.js';
import { setupSpeculativePanel } from './panel_speculative.js';

function describeSpeedModel(m) {
  const shape = `${m.n_layer} layers of width ${m.n_embd} (FFN ${m.n_ff}, ${m.n_head}/${m.n_head_kv} heads), vocabulary ${m.n_vocab}, ` +
    `${format(m.weight_bytes)}B of ${m.weight_type} weights read per decode step`;
  if (m.same_as_served) return `Panels 2–4 run on the served model too (${shape}); start the server with --speed-model for a memory-bound one.`;
  const weights = m.random_weights ? `random weights of shape ${shape}: speed does not depend on the values` : shape;
  return `Panel 1 runs on the served model. Panels 2–4 measure speed on ${m.path}: ${weights}.`;
}

async function main() {
  const info = await getJson('/explain/info');
  document.getElementById('model-facts').textContent =
    `Model: ${info.n_layer} layers, vocabulary ${info.n_vocab}, context ${info.n_ctx}; ${info.n_threads} thread(s).`;
  document.getElementById('speed-model-facts').textContent = describeSpeedModel(info.speed_model);
  setupRooflinePanel();
  setupSpeculativePanel(info);
  setupBatchingPanel();
  setupSchedulesPanel();
  setupKvMemoryPanel();
  setupDegenerationPanel(samplingSettings);
  await setupDistributionPanel(info);
  document.body.dataset.ready = 'true';
}

main().catch(showError);
