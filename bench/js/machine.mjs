// The CPU's model name, and the machine kind a run is filed under in bench/results.json: the model name with the
// CPU family, since cloud hosts name different generations alike ('AMD EPYC' is a Zen 3 core in family 25 and a
// Zen 5 core in family 26).
import { execFileSync } from 'node:child_process';
import os from 'node:os';

export function cpuIdentity() {
  let lines = [];
  try {
    lines = execFileSync('lscpu', { encoding: 'utf8' }).split('\n');
  } catch { /* no lscpu: fall back to what Node knows */ }
  const field = (name) => lines.find((l) => l.startsWith(`${name}:`))?.slice(name.length + 1).trim();
  const model = field('Model name') ?? os.cpus()[0]?.model ?? 'unknown';
  const family = field('CPU family');
  return { model, kind: family ? `${model} (family ${family})` : model };
}
