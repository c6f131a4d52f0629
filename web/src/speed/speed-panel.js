// The Speed card: "Run comparison" times the result on screen in the side worker, and the repository's
// benchmark results are drawn below it. Changing a control meanwhile does not stop the comparison; when it
// ends after such a change, the card says which settings it timed.
import { describeProblem, renderBench, renderSpeed } from './speed-view.js';

// el: { run, table, intro, chart, threads, story, note, bench }; lab() → { lastGood, wantedKey }.
export function setupSpeedPanel(el, { pool, status, lab }) {
  async function run() {
    const g = lab().lastGood;
    if (!g) return;
    const payload = { dims: g.dims, gen: g.gen, scale: g.scale ?? null, mask: g.mask, imported: g.imported };
    el.run.disabled = true;
    try {
      const result = await status.track(pool.sideJob('speed', payload, { onProgress: status.progress }), 'speed comparison');
      renderSpeed(el, result);
      const moved = lab().wantedKey !== g.key;
      el.note.hidden = !moved;
      el.note.textContent = moved ? `Timed for the settings shown when it started (${describeProblem(g.dims)}); the controls have changed since: run it again to time them.` : '';
    } catch (err) {
      if (err.name === 'CancelledError') {
        el.note.hidden = false;
        el.note.textContent = 'Comparison cancelled.';
      } else status.error(`Speed: ${err.message}`);
    } finally {
      el.run.disabled = false;
    }
  }

  el.run.addEventListener('click', run);
  el.intro.textContent =
    'Times the attention on screen with the SIMD build on 1 thread and on all threads, the scalar build and plain JavaScript, ' +
    'against the wasm SIMD peak measured in the same worker.' +
    (window.crossOriginIsolated ? '' : ' This page is not cross-origin isolated, so the package runs 1 thread only.');
  renderBench(el.bench);
}
