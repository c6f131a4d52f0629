// Counts instructions of a .wasm by name, over the whole code and inside loops, from npm binaryen's text form
// (Debian's binaryen 108 cannot read relaxed-SIMD ops). The text is folded: each instruction opens a
// parenthesis whose first word names it, so an instruction is inside a loop when an open `(loop` encloses it.
import binaryen from 'binaryen';
import { readFileSync } from 'node:fs';

// { total: Map(name → count), inLoops: Map(name → count) } for every instruction of the module at `url`.
export function countOps(url) {
  const module = binaryen.readBinary(readFileSync(url));
  let text;
  try {
    text = module.emitText();
  } finally {
    module.dispose();
  }
  const total = new Map(), inLoops = new Map();
  const add = (map, name) => map.set(name, (map.get(name) ?? 0) + 1);
  const open = [];  // the names of the open parentheses
  let loops = 0;
  // Strings (names, data) may hold parentheses: skip them whole.
  const token = /"(?:[^"\\]|\\.)*"|\(|\)|[^\s()"]+/g;
  let head = false;
  for (let m; (m = token.exec(text));) {
    const t = m[0];
    if (t === '(') {
      head = true;
    } else if (t === ')') {
      if (open.pop() === 'loop') loops--;
    } else if (head) {
      head = false;
      open.push(t);
      if (t === 'loop') loops++;
      add(total, t);
      if (loops > 0) add(inLoops, t);
    }
  }
  return { total, inLoops };
}
