// strideweave/threading.h — how many threads the CPU carrier's kernels use.
//
// Contract (docs/threading.md):
// - num_threads() is the number of threads a CPU kernel may use, the calling
//   thread included. Its first value is STRIDEWEAVE_NUM_THREADS when that
//   environment variable is set (a positive integer; anything else raises
//   ValueError on first use), otherwise the OpenMP runtime's default
//   (omp_get_max_threads(): OMP_NUM_THREADS, else the processors this
//   process may run on).
// - set_num_threads(n) changes it for every later call from any thread;
//   n < 1 raises ValueError and changes nothing.
// - The same count bounds the tuned library the contracted matmul calls
//   (oneDNN, on the same OpenMP runtime): strideweave never runs its own
//   workers and the library's at once, and a kernel called from inside a
//   parallel region runs on its calling thread.
// - Small work stays on the calling thread: a kernel splits only when each
//   thread gets at least a grain of work (docs/threading.md lists them).
// - threading_available() is false in a build without OpenMP (the
//   ThreadSanitizer build): kernels then always run on the calling thread,
//   while the setting is still kept and reported.
#pragma once

#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

int num_threads();
void set_num_threads(int n);
bool threading_available() noexcept;

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
