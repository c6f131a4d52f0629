// Saves bytes as a file through a temporary link (the browser's download, no server involved).
export function download(bytes, filename) {
  const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  // The download has taken its own reference by now; revoking later frees the blob.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
