// "Why scale by 1/√E": the study runs in the side worker after each finished compute, on the lab's seed and
// distribution with at most 128 queries and keys (enough rows for stable averages, quick at E = 1024). One
// study runs at a time; settings that change meanwhile are studied when it ends (the latest only). "New draw"
// studies fresh inputs from other streams of the seed.
import { ScalingView } from './scaling-view.js';

const STUDY_MAX = 128;

// el: { charts, intro, summary, newDraw }; lastGood() → the lab's last finished settings.
export function setupScalingPanel(el, { pool, status, lastGood }) {
  const view = new ScalingView(el);
  const study = { key: null, wanted: null, running: false, draw: 0 };

  async function run(s, { force = false } = {}) {
    const request = { gen: s.gen, L: Math.min(STUDY_MAX, s.dims.L), S: Math.min(STUDY_MAX, s.dims.S), draw: study.draw };
    const key = JSON.stringify(request);
    if (!force && key === study.key) return;
    study.wanted = request;
    if (study.running) return;
    study.running = true;
    try {
      while (study.wanted) {
        const next = study.wanted;
        study.wanted = null;
        const rows = await status.track(pool.sideJob('scaling', next, { onProgress: status.progress }), 'scaling study');
        study.key = JSON.stringify(next);
        view.setData(rows, next);
      }
    } catch (err) {
      study.wanted = null;
      if (err.name === 'CancelledError') el.summary.insertAdjacentHTML('afterbegin', '<p class="muted">Study cancelled: “New draw” runs it.</p>');
      else status.error(`Scaling study: ${err.message}`);
    } finally {
      study.running = false;
    }
  }

  el.newDraw.addEventListener('click', () => {
    if (!lastGood()) return;
    study.draw++;
    run(lastGood(), { force: true });
  });
  return { run, view };
}
