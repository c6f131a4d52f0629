// The generated text, streamed a character at a time, and what each character attended to: pointing at a
// generated character heats the characters before it, by the weight the chosen layer and head gave them,
// and lists every layer and head's view of the same context (the strips) beside it.
import { SEQUENTIAL } from '../shared/colormap.js';
import { attendedChars, heatOf } from './gpt-hover.js';

// A heat (0 … 1) as a background: viridis, see-through where the weight is small.
function heatColour(heat) {
  const k = 3 * Math.round(heat * 255);
  return `rgba(${SEQUENTIAL[k]}, ${SEQUENTIAL[k + 1]}, ${SEQUENTIAL[k + 2]}, ${(0.15 + 0.75 * heat).toFixed(3)})`;
}

const visible = (c) => (c === '\n' ? '↵' : c === ' ' ? '·' : c);

export class GenerateView {
  constructor({ output, strips, readout }) {
    Object.assign(this, { output, strips, readout });
    this.pick = null; // { layer, head } whose weights heat the text; null: the last layer's head 0
    this.reset('');
    output.addEventListener('pointerover', (e) => {
      const span = e.target.closest('span[data-pos]');
      if (span && this.tokens.has(Number(span.dataset.pos))) this.hover(Number(span.dataset.pos));
    });
    // From the keyboard: the text takes the focus, and ← → step through the written characters.
    output.tabIndex = 0;
    output.addEventListener('keydown', (e) => {
      if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
      const written = [...this.tokens.keys()];
      if (!written.length) return;
      e.preventDefault();
      const at = this.hovered ? written.indexOf(this.hovered.pos) : -1;
      const next = at < 0 ? (e.key === 'ArrowLeft' ? written.length - 1 : 0) : Math.min(written.length - 1, Math.max(0, at + (e.key === 'ArrowLeft' ? -1 : 1)));
      this.hover(written[next]);
    });
  }

  // A new generation from `prompt`: its characters are shown, not hoverable (the model did not write them).
  reset(prompt) {
    this.text = '';
    this.tokens = new Map(); // position in text → the 'token' reply that produced it
    this.spans = [];
    this.hovered = null;
    this.output.replaceChildren();
    this.strips.replaceChildren();
    this.readout.textContent = '';
    for (const c of prompt) this.append(c, null);
    this.promptLength = this.text.length;
  }

  // One character of the text; token: the Worker's 'token' reply that produced it, or null for the prompt.
  append(c, token) {
    const pos = this.text.length;
    this.text += c;
    const span = document.createElement('span');
    span.dataset.pos = pos;
    span.textContent = c;
    if (token) {
      span.className = 'gen';
      this.tokens.set(pos, token);
    } else span.className = 'prompt';
    this.spans.push(span);
    this.output.append(span);
  }

  // m: { index, char, attention }, index counting the generated characters from 0; its position in the text
  // follows the prompt.
  addToken(m) {
    const pos = this.promptLength + m.index;
    if (pos !== this.text.length) throw new RangeError(`generated character ${m.index} arrived after ${this.text.length - this.promptLength}`);
    this.append(m.char, m);
  }

  hover(pos) {
    const views = attendedChars(this.text, { index: pos, attention: this.tokens.get(pos).attention });
    this.hovered = { pos, views };
    for (const s of this.spans) {
      s.style.background = '';
      s.classList.remove('hovered');
    }
    this.spans[pos].classList.add('hovered');
    if (!views.length) {
      this.readout.textContent = 'This model has no attention: it writes each character from the one before it alone.';
      this.strips.replaceChildren();
      return;
    }
    const lastLayer = views.at(-1).layer;
    const pick = views.find((v) => this.pick && v.layer === this.pick.layer && v.head === this.pick.head) ?? views.find((v) => v.layer === lastLayer);
    for (const [p, heat] of heatOf(pick.keys)) if (this.spans[p]) this.spans[p].style.background = heatColour(heat);
    const top = [...pick.keys].sort((a, b) => b.weight - a.weight)[0];
    this.readout.textContent =
      `“${visible(this.text[pos])}” (character ${pos}) was written looking at the ${pick.keys.length} characters before it. ` +
      `Layer ${pick.layer}, head ${pick.head} (heating the text) gave most weight, ${top.weight.toFixed(2)}, to “${visible(top.char)}” at ${top.pos}. ` +
      'Pick another layer and head below.';
    this.drawStrips(views, pick);
  }

  // One strip per layer and head: the context's characters, each heated by that head's weight.
  drawStrips(views, pick) {
    this.strips.replaceChildren(
      ...views.map((v) => {
        const row = document.createElement('button');
        row.type = 'button';
        row.className = 'gpt-strip';
        row.classList.toggle('picked', v === pick);
        row.setAttribute('aria-pressed', String(v === pick));
        row.dataset.layer = v.layer;
        row.dataset.head = v.head;
        const label = Object.assign(document.createElement('span'), { className: 'gpt-strip-label', textContent: `L${v.layer} H${v.head}` });
        const chars = document.createElement('span');
        chars.className = 'gpt-strip-chars';
        const heat = heatOf(v.keys);
        for (const k of v.keys) {
          const s = Object.assign(document.createElement('span'), { textContent: visible(k.char) });
          s.style.background = heatColour(heat.get(k.pos));
          s.title = `“${visible(k.char)}” at ${k.pos}: weight ${k.weight.toFixed(3)}`;
          chars.append(s);
        }
        row.append(label, chars);
        row.addEventListener('click', () => {
          this.pick = { layer: v.layer, head: v.head };
          this.hover(this.hovered.pos);
        });
        return row;
      }),
    );
  }
}
