// Times llama.cpp (the prebuilt CPU library shipped in node-llama-cpp) on one GGUF, the way
// `nucleus bench` times itself: ppN = one prompt of N random tokens in one batch, tgN = N
// single-token decode steps from an empty context. Prints one JSON object.
//   node llama_cpp_runner.mjs --model M --threads T [--pp N] [--tg N] [--reps R] [--batch B]
// --batch B (with --tg) decodes B sequences at once (llama-batched-bench style): tg_ts counts
// the tokens of all sequences.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const threads = Number(args.threads ?? 2);
const pp = Number(args.pp ?? 0);
const tg = Number(args.tg ?? 0);
const reps = Number(args.reps ?? 1);
const batch = Number(args.batch ?? 1);
const promptForBatch = Number(args.prompt ?? 0);

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0, useMmap: true });
const contextSize = Math.max(pp, promptForBatch + tg) + 16;
const context = await model.createContext({
  contextSize: contextSize * batch, batchSize: Math.max(512, pp, batch), threads, sequences: batch, flashAttention: false,
});
const nVocab = model.tokens ? model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 32000 : 32000;
let seed = 12345;
const randomToken = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return 3 + (seed % (nVocab - 3)); };
const result = { threads, pp, tg, batch, pp_ts: [], tg_ts: [] };

async function timePrompt() {
  const sequence = context.getSequence();
  const tokens = Array.from({ length: pp }, randomToken);
  const start = process.hrtime.bigint();
  await sequence.evaluateWithoutGeneratingNewTokens(tokens);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  sequence.dispose();
  return pp / seconds;
}

// The batch's sequences are taken once and cleared between runs: a disposed sequence does not
// return to the context's pool right away ("No sequences left" on the next run).
let batchSequences = null;
async function timeGeneration() {
  batchSequences ??= Array.from({ length: batch }, () => context.getSequence());
  const sequences = batchSequences;
  await Promise.all(sequences.map((s) => s.clearHistory()));
  if (promptForBatch > 0)
    await Promise.all(sequences.map((s) => s.evaluateWithoutGeneratingNewTokens(Array.from({ length: promptForBatch }, randomToken))));
  const start = process.hrtime.bigint();
  await Promise.all(sequences.map(async (s) => {
    let n = 0;
    for await (const token of s.evaluate([randomToken()], { temperature: 0 })) {
      if (++n >= tg) break;
    }
  }));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return (tg * batch) / seconds;
}

if (pp > 0) {
  await timePrompt();  // warm-up
  for (let r = 0; r < reps; ++r) result.pp_ts.push(await timePrompt());
}
if (tg > 0) {
  await timeGeneration();  // warm-up
  for (let r = 0; r < reps; ++r) result.tg_ts.push(await timeGeneration());
}
console.log(JSON.stringify(result));
await context.dispose();
await model.dispose();
await llama.dispose();
