// Writes the README's C++ quick start into a folder as written: CMakeLists.txt (its cmake block), main.cpp (its
// cpp block) and expected.txt (the lines its `// →` comments say it prints). scripts/test-consumer.sh builds it
// against the installed library, runs it and compares.
//   node tests/consumer/readme-project.mjs <folder>
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { cppProject } from '../js/readme-blocks.mjs';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node tests/consumer/readme-project.mjs <folder>');
const { cmakeLists, main, prints } = cppProject();
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'CMakeLists.txt'), cmakeLists);
writeFileSync(join(dir, 'main.cpp'), main);
writeFileSync(join(dir, 'expected.txt'), `${prints.join('\n')}\n`);
