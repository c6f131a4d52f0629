// The decoding panel's run, without its DOM: the session on the package's worker (decode-session.js), the
// steps so far, Play's timer and which sequence a late answer belongs to. Every change ends in onChange();
// a failure in onError(message).
import { DecodeSession } from './decode-session.js';
import { WeightTriangle } from './decode-rows.js';

export class DecodeRun {
  // xa: a promise of the package's worker API (createXattnWorker); speed() → steps per second of Play.
  constructor(xa, { speed, onChange, onError }) {
    Object.assign(this, { xa, speed, onChange, onError });
    this.sequence = 0; // which sequence a step belongs to: a step of a replaced one is dropped
    this.session = null;
    this.settings = null;
    this.triangle = null;
    this.steps = []; // every step of this sequence: { t, length, weights, output, diff, … }
    this.worst = { weights: 0, output: 0 };
    this.playing = false;
    this.stepping = null; // the step in flight
    this.timer = null;
  }

  get done() {
    return Boolean(this.settings) && this.steps.length >= this.settings.T;
  }

  // A new sequence (what a changed setting does): stops playing; the new sequence replaces the old one when its
  // session is ready. settings === null (refused settings) leaves nothing to decode until they are fixed.
  async configure(settings) {
    this.pause();
    const sequence = ++this.sequence;
    this.session?.dispose().catch(() => {});
    this.session = null; // no step until the new sequence is ready
    if (!settings) {
      Object.assign(this, { settings: null, triangle: null });
      this.clearSteps();
      this.onChange();
      return;
    }
    try {
      const session = await DecodeSession.create(await this.xa, settings);
      if (sequence !== this.sequence) {
        session.dispose().catch(() => {});
        return;
      }
      Object.assign(this, { session, settings, triangle: new WeightTriangle(settings.H, settings.T) });
      this.clearSteps();
      this.onChange();
    } catch (err) {
      if (sequence === this.sequence) this.onError(err.message);
    }
  }

  clearSteps() {
    this.steps = [];
    this.worst = { weights: 0, output: 0 };
  }

  // One step: append the next position, attend its query row. Resolves when it is recorded.
  step() {
    if (this.stepping || !this.session || this.done) return this.stepping;
    const sequence = this.sequence;
    this.stepping = this.session
      .step()
      .then((s) => {
        if (sequence !== this.sequence) return;
        this.steps.push(s);
        this.triangle.addRow(s.t, s.weights);
        this.worst = { weights: Math.max(this.worst.weights, s.diff.weights), output: Math.max(this.worst.output, s.diff.output) };
        if (this.done) this.pause();
        this.onChange();
      })
      .catch((err) => {
        if (sequence !== this.sequence) return;
        this.pause();
        this.onError(err.message);
      })
      .finally(() => {
        this.stepping = null;
      });
    return this.stepping;
  }

  // Play: a step, then a wait so that steps start 1/speed s apart, until Pause or the last position.
  play() {
    if (this.playing) return;
    this.playing = true;
    this.onChange();
    const tick = async () => {
      const started = performance.now();
      await this.step();
      if (!this.playing) return;
      this.timer = setTimeout(tick, Math.max(0, 1000 / this.speed() - (performance.now() - started)));
    };
    tick();
  }

  pause() {
    clearTimeout(this.timer);
    this.timer = null;
    if (!this.playing) return;
    this.playing = false;
    this.onChange();
  }

  async reset() {
    this.pause();
    if (!this.session) return;
    const sequence = ++this.sequence;
    await this.session.reset();
    if (sequence !== this.sequence) return;
    this.clearSteps();
    this.triangle = new WeightTriangle(this.settings.H, this.settings.T);
    this.onChange();
  }
}
