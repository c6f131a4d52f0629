// Beside the triangle: the cache's K and V slots filling one position per step, the shapes of the last step
// (what was appended, what was attended, what came back), the bytes it copied into WebAssembly memory
// against a full copy, and how its row compares with full causal attention.
import { formatNumber, formatShape } from '../shared/shapes.js';
import { formatBytes } from '../shared/tensors.js';
import { matchesFull, stepCopyBytes } from './decode-rows.js';

export class StepView {
  constructor({ cache, shapes, match }) {
    Object.assign(this, { cacheBox: cache, shapes, match });
  }

  // settings: { H, Hkv, E, Ev, T }; last: the last step (or null before the first); worst: the largest |Δ|
  // over every step so far, { weights, output }.
  // settings === null: no sequence (refused settings), nothing to show.
  setData(settings, last, worst) {
    if (!settings) {
      this.cacheBox.replaceChildren();
      this.cacheBox.dataset.length = '0';
      this.shapes.replaceChildren();
      this.match.textContent = '';
      delete this.match.dataset.worst;
      return;
    }
    const { H, Hkv, E, Ev, T } = settings;
    const n = last ? last.length : 0;
    this.writeCache(T, n);
    if (!last) {
      this.shapes.innerHTML =
        `<div><dt>cache</dt><dd>empty: room for ${T} positions of K (1, ${Hkv}, ${T}, ${E}) and V (1, ${Hkv}, ${T}, ${Ev}), ` +
        `(B, Hkv, capacity, E), taken at creation. Step appends position 0.</dd></div>`;
      this.match.textContent = 'Each row will be checked against full causal attention on all the positions at once.';
      delete this.match.dataset.worst;
      return;
    }
    const t = last.t;
    const bytes = stepCopyBytes(settings, n);
    this.shapes.innerHTML =
      `<div><dt>append</dt><dd>key ${formatShape([1, Hkv, 1, E])}, value ${formatShape([1, Hkv, 1, Ev])} of position ${t} ` +
      `→ cache K ${formatShape([1, Hkv, n, E])}, V ${formatShape([1, Hkv, n, Ev])} <span class="sub">(B, Hkv, S, E)</span></dd></div>` +
      `<div><dt>attend</dt><dd>query ${formatShape([1, H, 1, E])} <span class="sub">(B, H, L = 1, E)</span> → ` +
      `weights ${formatShape(last.weightsShape)} <span class="sub">(B, H, L, S = ${n})</span>, output ${formatShape(last.outputShape)}` +
      (H !== Hkv ? `; each k/v head serves ${H / Hkv} query heads` : '') +
      `</dd></div>` +
      `<div><dt>copied in</dt><dd>${formatBytes(bytes.cache)} (the new query, key and value); recomputing from a full copy ` +
      `would copy ${formatBytes(bytes.full)} (the query and all ${n} keys and values)</dd></div>`;
    const later = t + 1 < T ? ` (its keys ${t + 1} … ${T - 1}, which the mask hides there, count as 0)` : '';
    const ok = matchesFull(last.diff);
    this.match.classList.toggle('bad', !ok);
    this.match.innerHTML =
      `Row ${t} <strong>${ok ? 'matches' : 'differs from'} full attention</strong>, computed once with isCausal on all ${T} positions: ` +
      `max |Δ| ${formatNumber(last.diff.weights)} for the weights${later} and ${formatNumber(last.diff.output)} for the output, every head. ` +
      `Rows 0 … ${t}: at most ${formatNumber(worst.weights)} and ${formatNumber(worst.output)}.`;
    this.match.dataset.worst = String(Math.max(worst.weights, worst.output));
  }

  // Two rows of T slots, K and V; the first n are held.
  writeCache(T, n) {
    const row = (name) => {
      const slots = Array.from({ length: T }, (_, j) => `<span class="kv-slot${j < n ? ' held' : ''}${j === n - 1 ? ' new' : ''}"></span>`).join('');
      return `<div class="kv-row" data-kv="${name}"><span class="kv-name">${name}</span><span class="kv-slots" style="--slots: ${T}">${slots}</span></div>`;
    };
    this.cacheBox.innerHTML = `${row('K')}${row('V')}<p class="hint">cache.length = ${n} of capacity ${T}</p>`;
    this.cacheBox.dataset.length = String(n);
  }
}
