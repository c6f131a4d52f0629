// The "Build a GPT" chapter's module Worker: trains, evaluates, probes and samples the course's models on the
// package, off the page's thread. The protocol is in PROTOCOL.md; gpt-host.js implements it.
import { createXattn } from 'xattn';
import { createGptHost } from './gpt-host.js';

const handle = createGptHost(
  (message, transfer) => self.postMessage(message, transfer),
  (threads) => createXattn(threads === undefined ? {} : { threads }),
);

self.onmessage = ({ data }) => {
  handle(data);
};
