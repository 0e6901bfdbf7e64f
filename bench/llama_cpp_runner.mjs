// Times llama.cpp (the prebuilt CPU library shipped in node-llama-cpp) on one GGUF, the way
// `nucleus bench` times itself: ppN = one prompt of N random tokens in one batch, tgN = N
// single-token decode steps from an empty context. Prints one JSON object.
//   node llama_cpp_runner.mjs --model M --threads T [--pp N] [--tg N] [--reps R] [--batch B]
// --batch B (with --tg) decodes B sequences at once (llama-batched-bench style): tg_ts counts
// the tokens of all sequences; each decode step is one llama_decode of B tokens (see "barrier"
// below; --dispatch nextCycle gives node-llama-cpp's default scheduling, which splits steps).
// Batched runs also report decode_calls, tokens_per_decode (mean), decode_hist (tokens per
// llama_decode -> calls) and decode_time_frac (share of the timed wall time inside llama_decode).
// node-llama-cpp resolves next to the script (bench/compare-llama-cpp copies it into
// bench/.llama-cpp); run as bench/llama_cpp_runner.mjs, it falls back to that install.
let nlcIndex;
try { nlcIndex = import.meta.resolve("node-llama-cpp"); } catch {
  nlcIndex = new URL("./.llama-cpp/node_modules/node-llama-cpp/dist/index.js", import.meta.url).href;
}
const { getLlama, LlamaLogLevel } = await import(nlcIndex);

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
// Batch-composition trace: the prioritization strategy is called once per llama_decode with every
// queued evaluation; record how many sequences and tokens each decode carries.
const trace = { on: false, calls: [] };
// node-llama-cpp's default strategy (its own code when found, else this equivalent for the
// one-token items of the decode phase).
const maximumParallelism = (await import(new URL(
  "./evaluator/LlamaContext/utils/batchItemsPrioritizationStrategies/maximumParallelismStrategy.js", nlcIndex).href)
  .catch(() => null))?.maximumParallelismStrategy ?? function ({ items, size }) {
  let left = size;
  const each = Math.max(1, Math.floor(size / Math.max(1, items.length)));
  const out = [];
  for (const item of items) {
    const n = Math.min(item.tokens.length, left, each);
    if (n <= 0) break;
    out.push({ item, processAmount: n });
    left -= n;
  }
  return out;
};
// Dispatch: node-llama-cpp's default ("nextCycle") sends whatever is queued on the next event-loop
// turn, and its decode loop keeps taking newly queued evaluations while it runs, so the B
// sequences' next tokens spread over several llama_decode calls. "barrier" (default) waits until
// every sequence in flight (`inFlight`) has queued its evaluation, so each decode step is one
// llama_decode of B tokens. --dispatch nextCycle restores the library default.
const dispatchMode = args.dispatch ?? "barrier";
let inFlight = 1;
const queuedSequences = () => context._queuedDecodeSequenceIds?.size ?? context._queuedDecodes?.length;
function barrierDispatch(dispatch) {
  let last = -1, idle = 0;
  const poll = () => {
    const queued = queuedSequences();
    if (queued == null || queued >= inFlight || queued === 0) return dispatch();
    idle = queued === last ? idle + 1 : 0;  // safety: a sequence that never queues
    last = queued;
    if (idle > 10000) return dispatch();
    setImmediate(poll);
  };
  poll();
}
// Lock-step decoding, as llama-batched-bench does: a sequence asks for its next token only once
// every sequence has its current one, and one macrotask later, when the decode loop that produced
// them has exited. (Each sequence's sampling finishes on its own worker callback and resumes that
// sequence at once; a sequence that queues its next token while the loop still waits for the
// others' sampling is taken by that loop alone, a partial batch.)
let step = null;
function stepBarrier() {
  if (step == null) { let release; step = { arrived: 0, done: new Promise((r) => { release = r; }) }; step.release = release; }
  const current = step;
  if (++current.arrived >= inFlight) { step = null; setImmediate(current.release); }
  return current.done;
}
// A sequence that stops (its token budget, or an end-of-generation token) leaves the lock-step:
// the others must not wait for it. (Before this, a sequence ending early left the rest waiting on
// a promise nothing would resolve; node then exited with an empty event loop and printed nothing.)
function leaveStepBarrier() {
  --inFlight;
  if (step != null && step.arrived >= inFlight) { const current = step; step = null; setImmediate(current.release); }
}
const context = await model.createContext({
  contextSize: contextSize * batch, batchSize: Math.max(512, pp, batch), threads, sequences: batch, flashAttention: false,
  batching: {
    dispatchSchedule: dispatchMode === "nextCycle" ? "nextCycle" : barrierDispatch,
    itemPrioritizationStrategy: (options) => {
      const chosen = maximumParallelism(options);
      if (trace.on) trace.calls.push({ seqs: chosen.length, tokens: chosen.reduce((a, c) => a + c.processAmount, 0) });
      return chosen;
    },
  },
});
// Time spent inside llama_decode (internal handle; best effort).
let decodeNs = 0n;
if (context._ctx?.decodeBatch) {
  const ctx = context._ctx, decodeBatch = ctx.decodeBatch.bind(ctx);
  try {
    Object.defineProperty(ctx, "decodeBatch", { value: async () => {
      const t = process.hrtime.bigint();
      try { return await decodeBatch(); } finally { if (trace.on) decodeNs += process.hrtime.bigint() - t; }
    } });
  } catch { /* not instrumentable: decode_time_frac is left out */ }
}
const nVocab = model.tokens ? model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 32000 : 32000;
let seed = 12345;
const randomToken = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return 3 + (seed % (nVocab - 3)); };
const result = { threads, pp, tg, batch, dispatch: dispatchMode, pp_ts: [], tg_ts: [] };

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
let wallNs = 0n;
async function timeGeneration(traced) {
  batchSequences ??= Array.from({ length: batch }, () => context.getSequence());
  const sequences = batchSequences;
  inFlight = sequences.length;
  await Promise.all(sequences.map((s) => s.clearHistory()));
  if (promptForBatch > 0)
    await Promise.all(sequences.map((s) => s.evaluateWithoutGeneratingNewTokens(Array.from({ length: promptForBatch }, randomToken))));
  trace.on = traced;
  const start = process.hrtime.bigint();
  let generated = 0;
  await Promise.all(sequences.map(async (s) => {
    let n = 0;
    // Greedy, no repeat penalty (no repeatPenalty option = no penalty sampler in the chain).
    // yieldEogToken: an end-of-generation token is yielded and decoding goes on, as with
    // llama-batched-bench and `nucleus bench batch` (which ignore EOS).
    try {
      for await (const token of s.evaluate([randomToken()], { temperature: 0, yieldEogToken: true })) {
        ++generated;
        if (++n >= tg) break;
        if (dispatchMode !== "nextCycle") await stepBarrier();
      }
    } finally {
      if (dispatchMode !== "nextCycle") leaveStepBarrier();
    }
  }));
  const ns = process.hrtime.bigint() - start;
  trace.on = false;
  if (traced) wallNs += ns;
  result.generated = (result.generated ?? 0) + (traced ? generated : 0);
  return generated / (Number(ns) / 1e9);
}

if (pp > 0) {
  await timePrompt();  // warm-up
  for (let r = 0; r < reps; ++r) result.pp_ts.push(await timePrompt());
}
if (tg > 0) {
  await timeGeneration(false);  // warm-up
  for (let r = 0; r < reps; ++r) result.tg_ts.push(await timeGeneration(true));
  // Decode-phase batch composition over the timed runs: llama_decode calls, mean tokens per call,
  // histogram tokens-per-call -> calls, and the share of wall time spent inside llama_decode.
  const hist = {};
  for (const c of trace.calls) hist[c.tokens] = (hist[c.tokens] ?? 0) + 1;
  result.decode_calls = trace.calls.length;
  result.tokens_per_decode = trace.calls.length ? trace.calls.reduce((a, c) => a + c.tokens, 0) / trace.calls.length : 0;
  result.decode_hist = hist;
  if (decodeNs > 0n) result.decode_time_frac = Number(decodeNs) / Number(wallNs);
}
console.log(JSON.stringify(result));
await context.dispose();
await model.dispose();
await llama.dispose();
