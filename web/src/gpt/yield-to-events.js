// A macrotask without setTimeout's clamping (nested timeouts wait ≥ 4 ms in browsers): a message to ourselves.
// Training and generation await it after every step, so the requests that arrive meanwhile are handled between steps.
export function yieldToEvents() {
  if (typeof MessageChannel === 'undefined') return new Promise((resolve) => setTimeout(resolve, 0));
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}
