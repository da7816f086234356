// strideweave/move.h — move and move_async (core-concepts.md 7.1-7.4;
// interop-movement, "move relocates values into a caller-supplied carrier",
// "Move participates in autograd across the carrier boundary"). The
// registry, the route interface and AwaitMove: <strideweave/move_operation.h>;
// docs/storage.md, "Movement".
//
// move(tensor, destination) = move_async(tensor, destination).wait(): fills
// `destination` with the tensor's physical span (layout.cosize() slots from
// the tensor's offset), releases the source carrier, and returns a Tensor on
// `destination` at offset 0 with the same Layout (a broadcast view keeps its
// stride-zero layout and needs only cosize slots).
//
// Checks, in this order, before anything is copied, allocated or released
// (a multi-subtensor tensor, rejected first by the specification, cannot be
// represented: a Tensor has one carrier):
//   the source carrier is released               RuntimeError
//   the source carrier is owned by a composite   RuntimeError
//     (unless the calling thread holds its owner's owner_access:
//     dependent_carrier.h; likewise an owned destination)
//   destination is null (not a Carrier)          TypeError
//   destination is the tensor's own carrier      ValueError
//   destination is released                      RuntimeError
//   destination is not publicly mutable          RuntimeError
//   destination's dtype is not the tensor's      TypeError
//   the route pins a class the pair does not match  TypeError
//   destination smaller than cosize and not an empty allocatable carrier  ValueError
// ("not a Tensor" is the Python binding's TypeError; in C++ the type says so.)
// A definition-backed pair with no TransferRoute whose definitions do not
// both permit the elementwise fallback: NotImplementedError, after the
// checks and before any allocation.
//
// Routing, one dispatcher by the exact (source class, destination class)
// pair: a pair where either class is definition-backed uses the source
// definition's TransferRoute for exactly the destination class (its
// Unsupported falls back to the elementwise copy when both definitions
// permit it, else NotImplementedError naming the pair and the reason; no
// route: the same rule); otherwise dispatch_move(source class, destination
// class). The elementwise fallback copies through host memory (memcpy) when
// both carriers have it, else through the classes' range access; see
// describe_move_route below.
//
// Transaction: an empty destination that supports allocation is sized to
// cosize; otherwise the destination's slots [0, cosize) are saved first (the
// before-image). The route copies; then the framework checks that both
// carriers are still live and unchanged by anyone else (versions), releases
// the source and steps the destination's version once. Any failure — a
// route's exception or failed completion, a progress callback's exception,
// a failed check, a source whose release fails — restores the destination
// (the before-image, or back to empty) and leaves the source live, so both
// carriers hold the values, versions and release state they had.
//
// move_async returns at once for a route that finishes later (an io_uring
// submission): errors found before it returns (the checks, a synchronous
// route's failure) are thrown by move_async itself; a pending transfer's
// outcome is recorded by the first AwaitMove::wait() or a done() that finds
// it finished. Neither carrier may be used by anyone else until then.
//
// Autograd: when grad mode is on and the tensor requires grad, the result
// gets a "move" node; its backward takes a live cotangent of the tensor's
// shape with an injective layout (RuntimeError for a released carrier,
// ValueError naming the injective requirement) and returns a detached
// gradient in fresh storage of the SOURCE carrier's class (new_like on the
// released source), under the source's layout when injective, else the
// canonical compact layout.
#pragma once

#include <memory>
#include <string>

#include <strideweave/carrier.h>
#include <strideweave/move_operation.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// ---------------------------------------------------------------- the route

// Which route move() takes for a pair (beyond the specification: the one
// move dispatcher's answer, for users and tests; docs/storage.md,
// "Routing"). kind:
//   TransferRoute       the route the source class's CarrierDefinition
//                       declares for exactly the destination class (its
//                       prepare may still answer Unsupported at run time:
//                       then the elementwise fallback, when permitted);
//   MoveOperation       the definition-free registry's entry for the pair;
//   ElementwiseFallback the framework's copy (ElementwiseMoveOperation).
// copy, how the values travel:
//   Route       the route's own mechanics;
//   HostMemory  one memcpy per contiguous run (both carriers are host memory);
//   Ranges      run by run through the classes' range access (host memory on
//               one side, range hooks on the other; a class that overrides
//               no range hook is read or written slot by slot).
enum class MoveRouteKind { TransferRoute, MoveOperation, ElementwiseFallback };
enum class MoveCopyPath { Route, HostMemory, Ranges };
struct MoveRouteInfo {
  MoveRouteKind kind = MoveRouteKind::ElementwiseFallback;
  // The route_id, the MoveOperation's name(), or "ElementwiseMoveOperation".
  std::string name;
  MoveCopyPath copy = MoveCopyPath::Ranges;
};
STRIDEWEAVE_EXPORT const char* to_string(MoveRouteKind kind) noexcept;  // "transfer_route", ...
STRIDEWEAVE_EXPORT const char* to_string(MoveCopyPath path) noexcept;   // "route", "host_memory", "ranges"

// The route a move from `source` to `destination` takes, by their exact
// classes (and, for `copy`, whether these live instances are host memory).
// Checks nothing else of move()'s list. NotImplementedError for a
// definition-backed pair with no TransferRoute whose definitions do not both
// permit the elementwise fallback (what move() raises for it).
STRIDEWEAVE_EXPORT MoveRouteInfo describe_move_route(const Carrier& source, const Carrier& destination);

AwaitMove<Tensor> move_async(const Tensor& tensor, const std::shared_ptr<Carrier>& destination,
                             const MoveOptions& options = {});
Tensor move(const Tensor& tensor, const std::shared_ptr<Carrier>& destination, const MoveOptions& options = {});

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
