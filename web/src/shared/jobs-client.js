// The page's side of one of its own workers (shared/jobs-serve.js is the worker's side): requests as
// promises, progress callbacks, and cancelling. Not the package's createXattnWorker, which the page uses
// where it needs only the package's calls (the multi-head walk, the decoding panel).
// A wasm call cannot be interrupted from outside, so cancel() terminates the worker and starts a fresh one,
// which loads the package at once ('init'), while nothing waits for it: the first request queues behind it.
// worker-pool.js decides which worker may be cancelled, so a cancel never loses a finished result.

export class CancelledError extends Error {
  constructor() {
    super('cancelled');
    this.name = 'CancelledError';
  }
}

export class WorkerClient {
  // onCrash(message): the worker failed outside any request (e.g. its module did not load). create: makes
  // the Worker, a module serving this protocol (jobs-serve.js), with its `new URL('./literal',
  // import.meta.url)` written out where it is called so bundlers see it.
  // init: the payload of the 'init' request every fresh worker gets first (worker.js reads its thread count
  // there), sent again to the replacement after a cancel.
  constructor({ create, onCrash = () => {}, init = {} }) {
    this.onCrash = onCrash;
    this.create = create;
    this.init = init;
    this.nextId = 1;
    this.pending = new Map();
    this.start();
  }

  start() {
    this.worker = this.create();
    this.worker.onmessage = (event) => this.receive(event.data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      const message = event.message || 'the worker script failed to load';
      this.failAll(new Error(message));
      this.onCrash(message);
    };
    this.worker.onmessageerror = () => this.failAll(new Error('a message from the worker could not be read'));
    this.ready = this.request('init', this.init);
    this.ready.catch(() => {}); // a failure to load reaches onCrash and every later request
  }

  receive({ id, kind, value, message, done, total, label }) {
    const job = this.pending.get(id);
    if (!job) return;
    if (kind === 'progress') {
      job.onProgress?.({ done, total, label });
      return;
    }
    this.pending.delete(id);
    if (kind === 'result') job.resolve(value);
    else job.reject(new Error(message));
  }

  failAll(err) {
    for (const job of this.pending.values()) job.reject(err);
    this.pending.clear();
  }

  request(type, payload, { onProgress, transfer = [] } = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { type, resolve, reject, onProgress });
      this.worker.postMessage({ id, type, payload }, transfer);
    });
  }

  // Busy while real work is pending: the start-up 'init' and the pool's 'drop' are housekeeping, and
  // cancelling a worker for them would only make it load the package again.
  get busy() {
    for (const job of this.pending.values()) if (job.type !== 'init' && job.type !== 'drop') return true;
    return false;
  }

  cancel() {
    this.worker.terminate();
    this.failAll(new CancelledError());
    this.start();
  }
}
