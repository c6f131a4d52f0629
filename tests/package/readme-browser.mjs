// The README's browser examples in Chromium, against the installed tarball: its pages as written, and its ES
// module examples that need nothing of Node's (the Worker one among them) in a page whose import map names the
// package's browser entries, as the README tells a page without a bundler to. Each must print what its `// →`
// comments say, with no error.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { browserBlocks, sameOutput } from '../js/readme-blocks.mjs';

// Head lines the pages get around the README's code: no favicon request (a 404 would be a console error).
const HEAD = '<!doctype html>\n<meta charset="utf-8">\n<link rel="icon" href="data:,">\n';
const IMPORTS = '<script type="importmap">{ "imports": { "xattn": "./node_modules/xattn/js/browser.js", '
  + '"xattn/worker": "./node_modules/xattn/js/worker.js" } }</script>\n';

// Writes each block's page into the app folder (the module blocks' .mjs files are written by the Node run).
export function writeBrowserPages(app) {
  const blocks = browserBlocks();
  for (const b of blocks) {
    const body = b.lang === 'html' ? b.code : `${IMPORTS}<script type="module" src="./${b.file}"></script>\n`;
    writeFileSync(join(app, b.page), HEAD + body);
    if (b.file) writeFileSync(join(app, b.file), b.code);
  }
  return blocks;
}

// What a page prints with console.log (arrays as the README writes them), and its errors, once it has printed
// `count` lines or failed.
async function printed(context, url, count) {
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.addInitScript(() => {
    const show = (v) => (Array.isArray(v) ? `[${v.map(show).join(', ')}]` : String(v));
    const log = console.log.bind(console);
    window.__printed = [];
    window.__failed = false;
    console.log = (...args) => {
      window.__printed.push(args.map(show).join(' '));
      log(...args);
    };
    window.addEventListener('error', () => { window.__failed = true; });
    window.addEventListener('unhandledrejection', () => { window.__failed = true; });
  });
  try {
    await page.goto(url);
    await page.waitForFunction((n) => window.__failed || window.__printed.length >= n, count, { timeout: 60000 });
    return { lines: await page.evaluate(() => window.__printed), errors };
  } catch (e) {
    return { lines: [], errors: [...errors, String(e.message ?? e).split('\n')[0]] };
  } finally {
    await page.close();
  }
}

// Runs every block's page from `server` (a static server of the app folder); returns what went wrong.
export async function runBrowserBlocks(context, server, blocks, where) {
  const failures = [];
  for (const b of blocks) {
    const { lines, errors } = await printed(context, server.url + b.page, b.prints.length);
    const name = `README line ${b.line} in Chromium (${where})`;
    if (errors.length) failures.push(`${name}: ${errors.join(' | ')}`);
    else if (lines.length !== b.prints.length || b.prints.some((want, i) => !sameOutput(lines[i], want))) {
      failures.push(`${name}: printed ${lines.join(' | ')}; README says ${b.prints.join(' | ')}`);
    }
  }
  return failures;
}
