// The Worker side of the page's own request protocol (jobs-client.js is the page's side): the page posts
// { id, type, payload }; a handler answers with progress messages { id, kind: 'progress', done, total, label }
// and then { id, kind: 'result', value } or { id, kind: 'error', message }.

// Typed arrays in a result are transferred, not copied: a 1024×1024 slice moves in no time.
function transferables(value, out = []) {
  if (ArrayBuffer.isView(value)) out.push(value.buffer);
  else if (Array.isArray(value)) value.forEach((v) => transferables(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => transferables(v, out));
  return [...new Set(out)];
}

// The browser's own allocation failure ("Array buffer allocation failed") says nothing about shapes; say it plainly.
function describeError(err) {
  const message = err && err.message ? err.message : String(err);
  if (/allocation failed|out of memory|Invalid typed array length|Array buffer/i.test(message)) {
    return `The browser could not allocate memory for these shapes (${message}). Make B, H, L or S smaller.`;
  }
  return message;
}

// handlers: type → (payload, progress) → value or a promise of it.
export function serve(handlers) {
  self.onmessage = async (event) => {
    const { id, type, payload } = event.data;
    const progress = (done, total, label) => self.postMessage({ id, kind: 'progress', done, total, label });
    try {
      const handler = handlers[type];
      if (!handler) throw new Error(`unknown request '${type}'`);
      const value = await handler(payload ?? {}, progress);
      self.postMessage({ id, kind: 'result', value }, transferables(value));
    } catch (err) {
      self.postMessage({ id, kind: 'error', message: describeError(err) });
    }
  };
}
