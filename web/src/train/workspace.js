// Float32Arrays a training loop keeps from step to step, by name: array(name, n) hands back the same array for as
// long as n stays the same. A fresh array costs more than its values: the browser's allocator gives a large one
// new memory pages, each faulted in on first touch (in Chromium here ~3 ms a MiB, more than the products that fill
// it), where Node's reuses freed ones. The package's calls write into these through their `out` options.
export class Workspace {
  constructor() {
    this.arrays = new Map();  // name → Float32Array
  }

  // The kept array for `name`, of n values; a new one when n changed. Its contents are whatever was written last.
  array(name, n) {
    let a = this.arrays.get(name);
    if (a === undefined || a.length !== n) {
      a = new Float32Array(n);
      this.arrays.set(name, a);
    }
    return a;
  }
}
