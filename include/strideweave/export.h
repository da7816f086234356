// strideweave/export.h — which symbols the shared library exports.
//
// libstrideweave is compiled with -fvisibility=hidden and
// -fvisibility-inlines-hidden (CMakeLists.txt): a symbol is exported only
// when a public header declares it. Every public header wraps its
// declarations in STRIDEWEAVE_PUBLIC_BEGIN / STRIDEWEAVE_PUBLIC_END, so
// classes (with their vtables and typeinfo: exceptions and carriers cross
// the library boundary) and functions declared there keep default
// visibility, and everything declared only under src/ stays hidden. One copy
// of every registry therefore lives in the library, shared by the Python
// module and out-of-tree carrier modules that link it.
//
// STRIDEWEAVE_TEST_API marks the few internal declarations (src/ headers)
// that the test suite and the tools reach into (kernel tables, the CPU
// block cache); they are exported but are not part of the public API.
// tests/CMakeLists.txt checks the exported symbol list (test
// `exported_symbols`).
#pragma once

#define STRIDEWEAVE_PUBLIC_BEGIN _Pragma("GCC visibility push(default)")
#define STRIDEWEAVE_PUBLIC_END _Pragma("GCC visibility pop")
#define STRIDEWEAVE_TEST_API __attribute__((visibility("default")))
// A friend function defined out of line takes its visibility from its
// namespace-scope definition, not from the class: friends declared in a
// public header carry this attribute.
#define STRIDEWEAVE_EXPORT __attribute__((visibility("default")))
