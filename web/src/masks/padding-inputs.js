// The key-padding inputs: one per batch element, how many of the S keys it keeps (the rest is padding).

// The bounds of batch element b's padding field: how many of the S keys it keeps.
export function paddingSpec(b, S) {
  return { label: `keys kept by b = ${b}`, kind: 'int', min: 0, max: S };
}

// One input per shown batch element: how many keys it keeps (the rest is padding). Built only while
// key padding is on, and only for the B elements that exist: the cost follows what is on the screen.
export function renderPaddingInputs(container, values, S) {
  container.replaceChildren(
    ...values.map((v, b) => {
      const label = document.createElement('label');
      label.textContent = `b = ${b}`;
      const input = document.createElement('input');
      // Text, like every numeric field of the page, so that a refusal quotes what was typed (fields.js).
      input.type = 'text';
      input.inputMode = 'numeric';
      input.spellcheck = false;
      input.dataset.max = String(S);
      input.value = String(v);
      input.dataset.b = String(b);
      input.setAttribute('aria-label', `keys kept by batch element ${b}, of S = ${S}`);
      label.append(input);
      return label;
    }),
  );
  container.dataset.shape = `${values.length}x${S}`;
}
