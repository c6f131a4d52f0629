// The course as the learner walks it: one step per stage (its title, its idea in a sentence, a Train button,
// where it stands and the text it wrote), and the table of validation losses, this run's beside the course's,
// with what each stage took off the loss of the one before it.
import { courseRows, formatGain, formatLoss, formatReference } from './gpt-format.js';

export class CourseView {
  // stages: [{ id, title, idea, reference }]; onTrain(stageId) when a Train button is pressed.
  constructor({ list, table }, stages, onTrain) {
    Object.assign(this, { list, table, stages });
    this.items = new Map();
    list.replaceChildren(
      ...stages.map((s, k) => {
        const li = document.createElement('li');
        li.className = 'gpt-stage';
        li.dataset.stage = s.id;
        const head = document.createElement('div');
        head.className = 'gpt-stage-head';
        const title = Object.assign(document.createElement('strong'), { textContent: `${k + 1}. ${s.title}` });
        const button = Object.assign(document.createElement('button'), { type: 'button', className: 'small', textContent: 'Train' });
        button.dataset.train = s.id;
        button.setAttribute('aria-label', `Train stage ${k + 1}: ${s.title}`);
        button.addEventListener('click', () => onTrain(s.id));
        const state = Object.assign(document.createElement('span'), { className: 'gpt-stage-state' });
        head.append(title, button, state);
        const idea = Object.assign(document.createElement('p'), { className: 'hint', textContent: s.idea });
        const sample = Object.assign(document.createElement('pre'), { className: 'gpt-sample', hidden: true });
        sample.setAttribute('aria-label', `Text written by stage ${k + 1}, ${s.title}`);
        li.append(head, idea, sample);
        this.items.set(s.id, { li, button, state, sample });
        return li;
      }),
    );
    this.table.createTHead().innerHTML =
      '<tr><th scope="col">stage</th><th scope="col" class="num">this run</th><th scope="col" class="num">the course</th><th scope="col" class="num">change</th></tr>';
    this.body = this.table.createTBody();
  }

  // results: { [stageId]: { valLoss, step, done, running, sample } }; current: the stage the Worker holds.
  update(results, current, { busy }) {
    const rows = courseRows(this.stages, results, current);
    this.body.replaceChildren(
      ...rows.map((r) => {
        const tr = document.createElement('tr');
        tr.dataset.stage = r.id;
        tr.classList.toggle('current', r.id === current);
        const cells = [
          [r.title, ''],
          [r.loss == null ? '—' : `${formatLoss(r.loss)}${r.state === 'done' ? '' : ` (step ${r.step})`}`, 'num run'],
          [formatReference(r.reference), 'num'],
          [formatGain(r.gain), r.gain > 0 ? 'num gain worse' : 'num gain'],
        ];
        for (const [text, cls] of cells) tr.append(Object.assign(document.createElement(tr.children.length ? 'td' : 'th'), { textContent: text, className: cls }));
        return tr;
      }),
    );
    for (const r of rows) {
      const item = this.items.get(r.id);
      item.li.classList.toggle('current', r.id === current);
      item.li.dataset.state = r.state;
      item.state.textContent = r.state === 'not trained' ? '' : r.loss == null ? r.state : `${r.state} · validation loss ${formatLoss(r.loss)}`;
      item.button.disabled = busy;
      const sample = results[r.id]?.sample;
      item.sample.hidden = !sample;
      item.sample.textContent = sample ?? '';
    }
  }
}
