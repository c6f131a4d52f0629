// The page's side of the model's Worker (../gpt/gpt-worker.js): sends its requests and hands each reply to
// the chapter by its type. The page's thread trains nothing and samples nothing; it only draws what arrives.

export class GptClient {
  // on: { [replyType]: callback } for the Worker's replies (ready, progress, eval, attention, sample, paused,
  // done, token, generated, exported, imported, error).
  constructor(on) {
    this.on = on;
    this.worker = new Worker(new URL('../gpt/gpt-worker.js', import.meta.url), { type: 'module' });
    this.worker.onmessage = ({ data }) => this.on[data.type]?.(data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.on.error?.({ message: event.message || 'the model’s Worker failed to load', request: 'init' });
    };
  }

  // text: the corpus; stage: a course stage id; steps: null for the course's number.
  init({ text, stage, seed, steps, probe }) {
    this.worker.postMessage({ type: 'init', text, stage, seed, ...(steps ? { steps } : {}) });
    if (probe) this.setProbe(probe);
  }

  start() {
    this.worker.postMessage({ type: 'start' });
  }

  pause() {
    this.worker.postMessage({ type: 'pause' });
  }

  resume() {
    this.worker.postMessage({ type: 'resume' });
  }

  setProbe(text) {
    this.worker.postMessage({ type: 'setProbe', text });
  }

  generate({ prompt, maxNew, temperature, topK, seed }) {
    this.worker.postMessage({ type: 'generate', prompt, maxNew, temperature, topK, seed });
  }

  stopGenerate() {
    this.worker.postMessage({ type: 'stopGenerate' });
  }

  exportModel() {
    this.worker.postMessage({ type: 'export' });
  }

  // bytes: an ArrayBuffer of a .safetensors file (transferred).
  importModel(bytes) {
    this.worker.postMessage({ type: 'import', bytes }, [bytes]);
  }
}
