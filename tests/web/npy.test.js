// The .npy codec: files NumPy wrote are read correctly, and files the page writes follow the format.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeNpy, encodeNpy, parseHeaderDict } from '../../web/src/shared/npy.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
const read = (name) => decodeNpy(readFileSync(path.join(fixtures, name)));

test('reads float32, float64, float16, int64 and bool files written by NumPy', () => {
  const f4 = read('f4_2x3.npy');
  assert.deepEqual(f4.shape, [2, 3]);
  assert.equal(f4.descr, '<f4');
  assert.deepEqual([...f4.data], [-1, -0.5, 0, 0.5, 1, 1.5]);
  assert.deepEqual([...read('f8_5.npy').data], [0, 0.25, 0.5, 0.75, 1]);
  assert.deepEqual([...read('f2_3.npy').data], [1.5, -2, 0.0009765625]);
  const i8 = read('i8_2x2.npy');
  assert.deepEqual(i8.shape, [2, 2]);
  assert.deepEqual([...i8.data], [-2, -1, 0, 1]);
  assert.deepEqual([...read('b1_4.npy').data], [1, 0, 0, 1]);
});

test('reads big-endian data and 0-dim arrays', () => {
  assert.deepEqual([...read('f4_bigendian_3.npy').data], [0.25, 1.25, 2.25]);
  const scalar = read('f4_scalar.npy');
  assert.deepEqual(scalar.shape, []);
  assert.deepEqual([...scalar.data], [7.5]);
});

test('reorders Fortran-ordered arrays to row-major', () => {
  const f = read('f4_fortran_2x3x2.npy');
  assert.deepEqual(f.shape, [2, 3, 2]);
  // np.arange(12).reshape(2, 3, 2) in C order, whatever the file's layout.
  assert.deepEqual([...f.data], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
});

test('written files have the magic, a 64-byte aligned header ending in a newline, and little-endian float32', () => {
  const data = Float32Array.from({ length: 4 * 10 * 64 }, (_, k) => Math.sin(k));
  const bytes = encodeNpy({ data, shape: [4, 10, 64] });
  assert.deepEqual([...bytes.subarray(0, 8)], [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  const headerLength = bytes[8] | (bytes[9] << 8);
  assert.equal((10 + headerLength) % 64, 0);
  const header = String.fromCharCode(...bytes.subarray(10, 10 + headerLength));
  assert.ok(header.endsWith('\n'));
  assert.deepEqual(parseHeaderDict(header), { descr: '<f4', fortran_order: false, shape: [4, 10, 64] });
  assert.equal(bytes.length, 10 + headerLength + data.byteLength);
  const view = new DataView(bytes.buffer, bytes.byteOffset + 10 + headerLength);
  assert.equal(view.getFloat32(4 * 7, true), data[7]);
});

test('write then read gives back the same tensor, also for one dim and from a subarray', () => {
  for (const shape of [[3], [2, 5], [4, 10, 64], [1, 2, 3, 4]]) {
    const n = shape.reduce((a, b) => a * b, 1);
    const backing = Float32Array.from({ length: n + 3 }, (_, k) => k * 0.37 - 2);
    const data = backing.subarray(3); // a non-zero byteOffset
    const back = decodeNpy(encodeNpy({ data, shape }));
    assert.deepEqual(back.shape, shape);
    assert.deepEqual(back.data, data);
  }
});

test('bad files and bad tensors are refused with a message', () => {
  assert.throws(() => decodeNpy(new Uint8Array([1, 2, 3])), /not a \.npy file/);
  const good = encodeNpy({ data: new Float32Array(6), shape: [2, 3] });
  assert.throws(() => decodeNpy(good.subarray(0, good.length - 4)), /truncated: shape \(2, 3\) of '<f4' needs 24 bytes/);
  const complex = new TextEncoder().encode("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }");
  const file = new Uint8Array(10 + 64);
  file.set(good.subarray(0, 8));
  file[8] = 64;
  file.set(complex, 10);
  file.fill(0x20, 10 + complex.length, 73);
  file[73] = 0x0a;
  assert.throws(() => decodeNpy(file), /dtype '<c8' is not supported/);
  assert.throws(() => encodeNpy({ data: new Float32Array(5), shape: [2, 3] }), /5 values but shape \(2, 3\) needs 6/);
  assert.throws(() => encodeNpy({ data: new Float64Array(6), shape: [2, 3] }), /Float32Array/);
});

// NumPy itself reading what the page writes, when Debian's python3-numpy is installed.
const hasNumpy = (() => {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import numpy'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

test('NumPy loads the files the page writes', { skip: hasNumpy ? false : 'python3-numpy is not installed' }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'xattn-npy-'));
  try {
    const file = path.join(dir, 'w.npy');
    const data = Float32Array.from({ length: 2 * 3 * 4 }, (_, k) => k / 8 - 1);
    writeFileSync(file, encodeNpy({ data, shape: [2, 3, 4] }));
    const out = execFileSync('/usr/bin/python3', ['-c', 'import numpy as np, sys, json; a = np.load(sys.argv[1]); print(json.dumps([a.dtype.str, list(a.shape), a.ravel().tolist()]))', file], { encoding: 'utf8' });
    const [dtype, shape, values] = JSON.parse(out);
    assert.equal(dtype, '<f4');
    assert.deepEqual(shape, [2, 3, 4]);
    assert.deepEqual(values, [...data]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
