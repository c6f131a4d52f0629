// The page's three workers, each with one job, so that cancelling one kind of work never throws away
// another's state (a cancel terminates a worker: a running wasm call cannot be interrupted):
// - the holder keeps the last finished attention and answers the heatmap's view and export requests;
// - the runner computes the next settings; when it finishes it becomes the holder, and the old holder
//   becomes the runner (dropping its old result, so two big results never linger);
// - the side worker runs the scaling study and the speed comparison, which need no finished result.
// Cancelling the runner or the side worker leaves the holder, and so the last finished result, untouched:
// nothing has to be recomputed, and the replacement worker loads the package while nobody waits for it.
//
// Threads per role (sent with 'init'; worker.js): the holder and the runner trade places, so both take the
// package's default, every thread when the page is cross-origin isolated (at most 4): the learner waits on
// the compute. The side worker runs its own work on 1 thread: the scaling study starts by itself after each
// compute, beside the compute workers, and on a 2-core machine its threads would only take cores from them;
// its calls are small (L, S ≤ 128), and the decoding step-time study's point is the cache against a full
// copy, not threads. Its speed comparison makes a 1-thread and an all-threads instance of its own.
import { WorkerClient } from './shared/jobs-client.js';

const createWorker = () => new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });

export const ROLE_THREADS = { compute: undefined, side: 1 };

export class WorkerPool {
  constructor({ onCrash }) {
    const compute = { threads: ROLE_THREADS.compute };
    this.holder = new WorkerClient({ create: createWorker, onCrash, init: compute });
    this.runner = new WorkerClient({ create: createWorker, onCrash, init: compute });
    this.side = new WorkerClient({ create: createWorker, onCrash, init: { threads: ROLE_THREADS.side } });
    this.requests = 0; // every request made, for the tests' "one request per change"
  }

  async compute(payload, options) {
    const runner = this.runner;
    this.requests++;
    const result = await runner.request('compute', payload, options);
    if (this.runner === runner) {
      this.runner = this.holder;
      this.holder = runner;
      this.runner.request('drop', {}).catch(() => {});
    }
    return result;
  }

  view(pick) {
    this.requests++;
    return this.holder.request('view', pick);
  }

  // The heads grid's thumbnails of batch elements 0 … count − 1, asked for only when the learner wants them.
  everyBatchThumbs(count) {
    this.requests++;
    return this.holder.request('everyBatchThumbs', { count });
  }

  tensor(name) {
    this.requests++;
    return this.holder.request('tensor', { name });
  }

  sideJob(type, payload, options) {
    this.requests++;
    return this.side.request(type, payload, options);
  }

  get computing() {
    return this.runner.busy;
  }

  get busy() {
    return this.runner.busy || this.holder.busy || this.side.busy;
  }

  // Stops a running compute (its promise rejects with CancelledError); the holder is not touched.
  cancelCompute() {
    if (this.runner.busy) this.runner.cancel();
  }

  cancelSide() {
    if (this.side.busy) this.side.cancel();
  }
}
