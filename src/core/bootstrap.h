// Internal: the library's one bootstrap step, installed by the composition
// root (src/library/bootstrap.cpp) and run before the first answer of any
// registry that the shipped carriers must fill first.
//
// Dependencies point down the layers (docs/design.md), so a lower layer
// cannot call the central carrier list or autograd. Instead the top of the
// library installs one function here during static initialisation of the
// library (a shared library, or a static one linked whole-archive), and
// every registry that must not answer before the shipped carriers declared
// calls ensure_bootstrapped() first.
#pragma once

namespace strideweave::detail {

using BootstrapFn = void (*)();

// Installs the bootstrap (the composition root does, once). noexcept and
// allocation-free, so it is safe during static initialisation.
void install_bootstrap(BootstrapFn fn) noexcept;

// Runs the installed bootstrap exactly once, on the first call from any
// thread; concurrent callers wait for it. A call made by the bootstrap itself
// (on the bootstrapping thread) returns at once. RuntimeError when no
// bootstrap was installed (a static library linked without its registration
// objects).
void ensure_bootstrapped();

// True while the calling thread runs the bootstrap.
bool bootstrapping() noexcept;

}  // namespace strideweave::detail
