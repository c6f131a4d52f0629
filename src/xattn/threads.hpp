// How many threads xattn's calls use. Process-wide, like torch.set_num_threads: a plan records the count
// when it is made (its workspace holds one scratch per thread) and its run uses exactly that many.
//
// Results do not depend on the count: every call is cut into the same tasks whatever the count (query
// blocks of a problem, key chunks of a decoding step, row blocks of a projection), each task's numbers
// come out of the same code, and partial results are merged in a fixed order. The tests check that
// 1, 2, 3 and 4 threads give bit-identical results.
#pragma once

namespace xattn {

// The default count: min(kDefaultMaxThreads, the machine's cores), as the JS package's createXattn (where
// shared memory allows threads); 1 in a WebAssembly build until the JS package sets it.
constexpr unsigned kDefaultMaxThreads = 4;

// Threads every later plan may use: the calling thread and n - 1 helpers that sleep between calls.
// Clamped to [1, max_threads()]; returns the count now in force.
unsigned set_num_threads(unsigned n);
unsigned num_threads();
// The most this build can run: 64 natively; in WebAssembly the threaded build's worker pool plus the
// calling thread, and 1 in a build without threads.
unsigned max_threads();

// How long each helper keeps polling for the next call after finishing one, before it sleeps, in microseconds
// (as OpenMP's blocktime or onnxruntime's spinning). A call that finds its helpers polling starts them at once;
// waking a sleeping one costs tens of microseconds or more, which a call of a few hundred microseconds (a
// decoding step at a few hundred positions) loses much of its second thread to. Polling keeps a core busy, so
// the default is short: 200 µs covers back-to-back calls (a projection, then attention), not the gaps of a
// decoder that does other work between its steps; such a program may raise it to cover them. Process-wide;
// clamped to [0, kMaxSpinMicroseconds]; returns the value now in force, which the helpers take up at once
// (a polling helper whose time is now past sleeps).
constexpr unsigned kDefaultSpinMicroseconds = 200, kMaxSpinMicroseconds = 1000000;
unsigned set_spin_microseconds(unsigned us);
unsigned spin_microseconds();

}  // namespace xattn
