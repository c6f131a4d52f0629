// NumPy's .npz: a zip archive of .npy files, one per array, named '<key>.npy' (np.savez writes them
// uncompressed, np.savez_compressed deflated). np.load('model.npz') gives the arrays by key, which is how
// the trained parameters reach PyTorch under their state-dict names. The writer stores (no compression:
// the floats would barely shrink); the reader takes stored and deflated entries.
// ref: https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT (local headers, central directory)

const LOCAL = 0x04034b50;
const CENTRAL = 0x02014b50;
const END = 0x06054b50;
const DOS_DATE = (1 << 5) | 1; // 1980-01-01, the earliest date a zip entry can carry

let crcTable = null;
// CRC-32 (the zip polynomial 0xEDB88320, reflected), which every entry's headers carry.
export function crc32(bytes) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = crcTable[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const ascii = (s) => Uint8Array.from(s, (ch) => {
  const code = ch.charCodeAt(0);
  if (code > 0x7e || code < 0x20) throw new RangeError(`zip: names and comments here are printable ASCII, got '${s}'`);
  return code;
});

// files: [{ name, bytes }] → the bytes of a zip archive storing each, with an optional archive comment.
export function writeZip(files, comment = '') {
  const parts = [];
  const central = [];
  let offset = 0;
  for (const { name, bytes } of files) {
    const nameBytes = ascii(name);
    const crc = crc32(bytes);
    const local = new DataView(new ArrayBuffer(30));
    // signature, version 2.0, flags 0, method 0 (stored), time 00:00, date 1980-01-01, crc, sizes, name length.
    local.setUint32(0, LOCAL, true);
    local.setUint16(4, 20, true);
    local.setUint16(12, DOS_DATE, true);
    local.setUint32(14, crc, true);
    local.setUint32(18, bytes.length, true);
    local.setUint32(22, bytes.length, true);
    local.setUint16(26, nameBytes.length, true);
    parts.push(new Uint8Array(local.buffer), nameBytes, bytes);
    const c = new DataView(new ArrayBuffer(46));
    c.setUint32(0, CENTRAL, true);
    c.setUint16(4, 20, true);
    c.setUint16(6, 20, true);
    c.setUint16(14, DOS_DATE, true);
    c.setUint32(16, crc, true);
    c.setUint32(20, bytes.length, true);
    c.setUint32(24, bytes.length, true);
    c.setUint16(28, nameBytes.length, true);
    c.setUint32(42, offset, true);
    central.push(new Uint8Array(c.buffer), nameBytes);
    offset += 30 + nameBytes.length + bytes.length;
  }
  const centralSize = central.reduce((n, p) => n + p.length, 0);
  const commentBytes = ascii(comment);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, END, true);
  end.setUint16(8, files.length, true);
  end.setUint16(10, files.length, true);
  end.setUint32(12, centralSize, true);
  end.setUint32(16, offset, true);
  end.setUint16(20, commentBytes.length, true);
  const all = [...parts, ...central, new Uint8Array(end.buffer), commentBytes];
  const out = new Uint8Array(all.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of all) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function inflateRaw(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// The bytes of a zip archive → { files: [{ name, bytes }], comment }, read from its central directory.
// Stored and deflated entries are read; anything else (encryption, zip64, other methods) is refused.
export async function readZip(u8) {
  const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  // The end record sits in the last 22 bytes plus at most a 65535-byte comment.
  let endAt = -1;
  for (let p = u8.length - 22; p >= Math.max(0, u8.length - 22 - 0xffff); p--) {
    if (view.getUint32(p, true) === END) {
      endAt = p;
      break;
    }
  }
  if (endAt < 0) throw new RangeError('not a zip archive (.npz): no end of central directory');
  const count = view.getUint16(endAt + 10, true);
  let at = view.getUint32(endAt + 16, true);
  const commentLength = view.getUint16(endAt + 20, true);
  const comment = String.fromCharCode(...u8.subarray(endAt + 22, endAt + 22 + commentLength));
  const files = [];
  for (let k = 0; k < count; k++) {
    if (at + 46 > u8.length || view.getUint32(at, true) !== CENTRAL) throw new RangeError('zip: broken central directory');
    const flags = view.getUint16(at + 8, true);
    const method = view.getUint16(at + 10, true);
    const crc = view.getUint32(at + 16, true);
    const packed = view.getUint32(at + 20, true);
    const size = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const noteLength = view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    const name = new TextDecoder().decode(u8.subarray(at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extraLength + noteLength;
    if (flags & 1) throw new RangeError(`zip: ${name} is encrypted`);
    if (packed === 0xffffffff || local === 0xffffffff) throw new RangeError(`zip: ${name} needs zip64, which is not read here`);
    if (local + 30 > u8.length || view.getUint32(local, true) !== LOCAL) throw new RangeError(`zip: ${name} has no local header`);
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    if (start + packed > u8.length) throw new RangeError(`zip: ${name} is truncated`);
    const raw = u8.subarray(start, start + packed);
    let bytes;
    if (method === 0) bytes = raw.slice();
    else if (method === 8) bytes = await inflateRaw(raw);
    else throw new RangeError(`zip: ${name} uses compression method ${method} (stored and deflate are read)`);
    if (bytes.length !== size || crc32(bytes) !== crc) throw new RangeError(`zip: ${name} is damaged (size or CRC-32 mismatch)`);
    files.push({ name, bytes });
  }
  return { files, comment };
}
