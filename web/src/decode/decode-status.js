// The decoding panel's status line and buttons, from its run's state (pure).

// run: { settings, steps, playing, done }; speed: Play's steps per second; refused: the settings' problems
// as a sentence, or null.
export function decodeStatus(run, speed, refused) {
  if (refused) return 'Nothing to decode: the settings above are refused. Fix them to start a new sequence.';
  const s = run.settings;
  if (!s) return 'Preparing the sequence…';
  const n = run.steps.length;
  if (n === 0) return `Ready: ${s.T} positions to decode (H = ${s.H}, Hkv = ${s.Hkv}, E = ${s.E}), the cache empty.`;
  const what = run.playing ? `Playing at ${speed} step${speed === 1 ? '' : 's'}/s` : run.done ? 'Done' : 'Paused';
  return `${what}: step ${n - 1} decoded, ${n} of ${s.T} positions in the cache.`;
}

// Which buttons may be pressed: nothing without a sequence; Step not while playing or after the last position.
export function decodeButtons(run, refused) {
  const usable = Boolean(run.session) && !refused;
  return {
    step: usable && !run.playing && !run.done,
    play: usable && (!run.done || run.playing),
    reset: usable,
  };
}
