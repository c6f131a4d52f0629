// The page's side of the training Worker: sends requests, and hands each message to the panel. The
// page's thread does no training work: it only draws what arrives.

export class TrainClient {
  // on: { ready, snapshot, exported, loaded, error } callbacks.
  constructor(on) {
    this.on = on;
    this.worker = new Worker(new URL('./train-worker.js', import.meta.url), { type: 'module' });
    this.worker.onmessage = ({ data }) => this.on[data.type]?.(data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.on.error({ message: event.message || 'the training worker failed to load', request: 'init' });
    };
  }

  configure(settings) {
    this.worker.postMessage({ type: 'configure', settings });
  }

  start(until, pace) {
    this.worker.postMessage({ type: 'start', until, pace });
  }

  pause() {
    this.worker.postMessage({ type: 'pause' });
  }

  // The pace of the run in progress (steps per second; 0 is full speed).
  setPace(pace) {
    this.worker.postMessage({ type: 'pace', pace });
  }

  exportParameters() {
    this.worker.postMessage({ type: 'export' });
  }

  // bytes: an ArrayBuffer of an .npz (transferred); fallback: the panel's settings for what the file lacks.
  load(bytes, fallback) {
    this.worker.postMessage({ type: 'load', bytes, fallback }, [bytes]);
  }
}
