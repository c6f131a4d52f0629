// The "Build a GPT" benchmark's record in bench/results.json (the `gpt` section of this machine kind's run) and
// the arithmetic behind it: the products a training step computes, and what each side's time makes of them
// against the wasm SIMD peak timed in the bench's own process.

// FLOPs of one training step's products for nanoGPT's model: per layer and token the projections and the
// feed-forward (2·(3E² + E² + 2·4E²) = 24E²), per layer the causal attention (2·B·T²·E: scores and weights·V over
// the half of the T × T square a row may see), the head (2·E·V a token); the backward computes twice the forward's.
// Embeddings, LayerNorms, softmax and the optimiser are not counted: they are small, and both sides do them.
export function trainingFlopsPerStep({ nLayer, nEmbd: E, blockSize: T, batchSize: B, vocab: V }) {
  const tokens = B * T;
  const forward = nLayer * (tokens * 24 * E * E + 2 * B * T * T * E) + tokens * 2 * E * V;
  return 3 * forward;
}

const round = (x, digits) => (typeof x === 'number' && Number.isFinite(x) ? Number(x.toFixed(digits)) : null);

// side: { elapsedMs, evals: { step: validation loss } }; peakGflops: the plain wasm SIMD peak at `threads`.
export function gptSection({ steps, threads, config, browser, torch, peakGflops, date = new Date().toISOString() }) {
  const flops = trainingFlopsPerStep(config);
  const sideOf = (r) => {
    if (!r) return null;
    const msPerStep = r.elapsedMs / steps;
    const gflops = flops / (msPerStep / 1000) / 1e9;
    return { seconds: round(r.elapsedMs / 1000, 1), msPerStep: round(msPerStep, 1), gflops: round(gflops, 1), validationLoss: r.evals };
  };
  const xattn = sideOf(browser);
  const pytorch = sideOf(torch);
  const section = { date, steps, threads, flopsPerStep: flops, peakGflops: round(peakGflops, 1), xattn, pytorch };
  if (xattn && peakGflops) section.xattnPercentOfPeak = round((100 * xattn.gflops) / peakGflops, 0);
  if (xattn && pytorch) section.speedVsPytorch = round(pytorch.msPerStep / xattn.msPerStep, 2);
  // Twice PyTorch's speed (the target) as a share of the peak: above 100%, the wasm peak itself forbids it.
  if (pytorch && peakGflops) section.twiceTorchPercentOfPeak = round((100 * 2 * pytorch.gflops) / peakGflops, 0);
  return section;
}

// The file's runs with `section` as the `gpt` field of this machine kind's run, in its place (a run of its own,
// last, when the bench of attention has not run on this kind: the README's table stays the newest attention run's).
export function withGptSection(previous, machineKind, section) {
  const runs = Array.isArray(previous?.runs) ? previous.runs : [];
  if (!runs.some((r) => r.machineKind === machineKind)) return { runs: [...runs, { machineKind, gpt: section }] };
  return { runs: runs.map((r) => (r.machineKind === machineKind ? { ...r, gpt: section } : r)) };
}
