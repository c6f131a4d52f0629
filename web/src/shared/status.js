// The header's status area: which build runs on how many threads, progress with a Cancel button while the worker works, and the
// error banner. Every failure ends up here as a sentence, never as a blank page.

const RESIZE_NOTICE = /^ResizeObserver loop (completed with undelivered notifications|limit exceeded)/;

export function createStatus({ build, box, label, bar, cancel, error, errorText, dismiss }) {
  let active = 0;
  let noteTimer = null;
  const api = {
    lastError: null,
    setBuild({ simd, relaxedSimd = false, version, threads = 1 }, ms = null) {
      const took = ms === null ? '' : ` · attention in ${ms < 1 ? ms.toPrecision(2) : ms.toFixed(ms < 100 ? 1 : 0)} ms`;
      // A no-break space keeps "2 threads" together where the line wraps (a phone).
      const text = `xattn ${version} · ${relaxedSimd ? 'WebAssembly relaxed-SIMD build' : simd ? 'WebAssembly SIMD build' : 'WebAssembly scalar build'} · ${threads}\u00a0thread${threads === 1 ? '' : 's'}${took}`;
      // While a note shows, the build name waits to come back.
      if (build.dataset.text !== undefined) build.dataset.text = text;
      else build.textContent = text;
    },
    // Shows progress while `promise` runs; returns it unchanged.
    track(promise, text) {
      active++;
      label.textContent = `${text}…`;
      bar.removeAttribute('value'); // indeterminate until the worker reports a fraction
      box.hidden = false;
      const done = () => {
        active--;
        if (active === 0) box.hidden = true;
      };
      promise.then(done, done);
      return promise;
    },
    progress({ done, total, label: text }) {
      if (text) label.textContent = `${text}…`;
      if (total > 0) {
        bar.max = total;
        bar.value = done;
      }
    },
    onCancel(fn) {
      cancel.addEventListener('click', fn);
    },
    error(message) {
      api.lastError = message;
      errorText.textContent = message;
      error.hidden = false;
    },
    clearError() {
      error.hidden = true;
    },
    // A passing remark in the status line (e.g. after a cancel), which fades back to the build name.
    note(text) {
      const previous = build.dataset.text ?? build.textContent;
      build.dataset.text = previous;
      build.textContent = text;
      clearTimeout(noteTimer);
      noteTimer = setTimeout(() => {
        build.textContent = build.dataset.text;
        delete build.dataset.text;
      }, 4000);
    },
  };
  dismiss.addEventListener('click', () => api.clearError());
  // Anything that escapes a handler still reaches the page as a message. The browser's notice that a
  // ResizeObserver left notifications for the next frame is not an error of the page (every observer here
  // redraws in time); it is not shown.
  window.addEventListener('error', (e) => {
    if (e.message && !RESIZE_NOTICE.test(e.message)) api.error(`Unexpected error: ${e.message}`);
  });
  window.addEventListener('unhandledrejection', (e) => api.error(`Unexpected error: ${e.reason?.message ?? e.reason}`));
  return api;
}
