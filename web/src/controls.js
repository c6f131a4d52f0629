// The control form ↔ the page's settings. Reading never throws: a field that is not a whole number comes
// back as NaN and checkDims/checkGen name it on the page.

const DIM_NAMES = ['B', 'H', 'Hkv', 'L', 'S', 'E', 'Ev'];

function intValue(input) {
  const v = input.value.trim();
  return /^\d+$/.test(v) ? Number(v) : NaN;
}

export function readControls(form) {
  const f = form.elements;
  const dims = { useHeads: f.useHeads.checked };
  for (const name of DIM_NAMES) dims[name] = intValue(f[name]);
  const gen = { seed: intValue(f.seed), distribution: f.distribution.value, scale: Number(f.scale.value) };
  return {
    dims,
    gen,
    causal: f.causal.checked,
    alignment: form.querySelector('input[name="alignment"]:checked').value,
    paddingOn: f.padding.checked,
  };
}

export function checkGen(gen) {
  const problems = [];
  if (!Number.isInteger(gen.seed) || gen.seed > 0xffffffff) problems.push('seed must be a whole number from 0 to 4294967295');
  if (!Number.isFinite(gen.scale) || gen.scale <= 0) problems.push('scale must be a number above 0');
  return problems;
}

// Writes settings back (presets, imports, restoring after a cancel). `locked` maps dims fixed by imported
// files to the file that fixes them; those inputs are disabled.
export function writeControls(form, { dims, gen, causal, alignment, paddingOn }, locked = {}) {
  const f = form.elements;
  for (const name of DIM_NAMES) f[name].value = String(dims[name]);
  f.useHeads.checked = dims.useHeads;
  if (gen) {
    f.seed.value = String(gen.seed);
    f.distribution.value = gen.distribution;
    f.scale.value = String(gen.scale);
  }
  if (causal !== undefined) f.causal.checked = causal;
  if (alignment) form.querySelector(`input[name="alignment"][value="${alignment}"]`).checked = true;
  if (paddingOn !== undefined) f.padding.checked = paddingOn;
  syncEnabled(form, locked);
}

// Enables what makes sense: H and Hkv only with heads, the alignment only with causal, nothing a file fixes.
export function syncEnabled(form, locked = {}) {
  const f = form.elements;
  for (const name of DIM_NAMES) {
    const headDim = name === 'H' || name === 'Hkv';
    f[name].disabled = Boolean(locked[name]) || (headDim && !f.useHeads.checked);
    f[name].title = locked[name] ? `set by the imported ${locked[name]}` : '';
  }
  f.useHeads.disabled = Boolean(locked.useHeads);
  for (const radio of form.querySelectorAll('input[name="alignment"]')) radio.disabled = !f.causal.checked;
}

// One number input per batch element: how many keys it keeps (the rest is padding).
export function renderPaddingInputs(container, values, S) {
  container.replaceChildren(
    ...values.map((v, b) => {
      const label = document.createElement('label');
      label.textContent = `b = ${b}`;
      const input = document.createElement('input');
      input.type = 'number';
      input.min = '0';
      input.max = String(S);
      input.step = '1';
      input.value = String(v);
      input.dataset.b = String(b);
      input.setAttribute('aria-label', `keys kept by batch element ${b}, of S = ${S}`);
      label.append(input);
      return label;
    }),
  );
}

// The padding values typed so far, clamped to [0, S]; an unreadable field keeps its previous value.
export function readPaddingInputs(container, previous, S) {
  return previous.map((old, b) => {
    const input = container.querySelector(`input[data-b="${b}"]`);
    const v = input ? intValue(input) : NaN;
    return Number.isInteger(v) ? Math.min(S, v) : Math.min(S, old);
  });
}
