// Where the chapter's training text comes from: Tiny Shakespeare, fetched from the page's own server, or a
// .txt the learner drops in or picks. Returns { text, name, source } or throws an Error with a sentence.

export const DEFAULT_CORPUS = {
  url: 'data/tinyshakespeare.txt',
  name: 'Tiny Shakespeare',
  source: 'Shakespeare’s plays (public domain), as assembled for char-rnn',
};

// The model needs more text than one window of context plus the validation tenth; far less than this and a
// "validation loss" is a handful of characters.
export const MIN_CHARS = 10_000;
// A string this size is sent to the Worker whole; beyond it the tab's memory is the limit, not the lesson.
export const MAX_BYTES = 50 * 1024 * 1024;

export async function fetchDefaultCorpus() {
  const url = new URL(DEFAULT_CORPUS.url, document.baseURI);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`the training text ${DEFAULT_CORPUS.name} could not be loaded (${res.status} from ${url.pathname})`);
  return { text: await res.text(), name: DEFAULT_CORPUS.name, source: DEFAULT_CORPUS.source };
}

// file: a File from a drop or a file input.
export async function readCorpusFile(file) {
  if (!/\.txt$/i.test(file.name) && file.type !== 'text/plain') throw new Error(`“${file.name}” is not a .txt file: drop a plain text file`);
  if (file.size > MAX_BYTES) throw new Error(`“${file.name}” is ${(file.size / 1024 / 1024).toFixed(0)} MB; the lab takes text files up to 50 MB`);
  const text = await file.text();
  if (text.length < MIN_CHARS) {
    throw new Error(`“${file.name}” has ${text.length} characters; the model needs at least ${MIN_CHARS.toLocaleString('en-US')} to learn from and to validate on`);
  }
  return { text, name: file.name, source: 'your file' };
}
