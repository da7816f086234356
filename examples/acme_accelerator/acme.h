// acme: an out-of-tree accelerator for strideweave (README.md here).
//
// - acme::Device, a definition-backed carrier (extension::DefinedCarrier)
//   whose storage provider keeps Float32 values in acme's own arena (a
//   separate pool of device blocks, not the host heap of strideweave's
//   carriers);
// - a kernel pack "acme@1.0" with two patterns for acme.fused_linear:
//   "acme.tiled" (preference 10, 2x2 register tiles: declines at run time
//   when m or n is odd) and "acme.generic" (preference 0, every shape);
// - acme.fused_linear(x, w, b) = relu(x @ w + b), x (m, k), w (k, n), b (n),
//   Float32, with a reference and a VJP (gradients for x, w and b);
// - a pattern "acme.add" for the built-in add on two Float32 tensors (its
//   meaning, gradient and broadcasting are the built-in definition's).
#pragma once

#include <strideweave/strideweave.h>

#include <memory>
#include <vector>

namespace acme {

// Registers the carrier, the pack, the operation and its opcheck inputs
// (once; later calls do nothing).
void register_acme();

// The operation (register_acme() first).
std::shared_ptr<const strideweave::operation::OperationDefinition> fused_linear();

// A compact Float32 tensor on acme::Device holding `values` in logical order
// (first mode fastest).
strideweave::Tensor device_tensor(const std::vector<float>& values, const strideweave::Shape& shape);

// A fresh zero-filled acme::Device carrier of `slots` Float32 slots (a move
// destination).
std::shared_ptr<strideweave::Carrier> device_carrier(std::int64_t slots);

// How many arena blocks are live (each Device instance holds one).
std::size_t live_blocks();

}  // namespace acme

// The entry point `strideweave check --plugin` calls.
extern "C" void strideweave_plugin_init();
