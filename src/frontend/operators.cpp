// C++ scalars as rank-0 tensors. See include/strideweave/ops/operators.h.
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

namespace strideweave {

Tensor scalar_like(const Tensor& like, WeakScalar value) {
  like.carrier()->require_live("scalar_like");
  Value v = value.is_bool()                               ? Value::from_bool(value.real_value() != 0.0)
            : value.kind() == WeakScalarKind::INTEGER ? Value::from_int32(value.to_int32("scalar_like"))
                                                      : Value::from_float32(value.to_float32());
  const DType& dtype = dtype_of(v.kind);
  const std::vector<Value> values{v};
  return Tensor(like.carrier()->new_like(values, true, &dtype), 0, Layout::compact(Shape{}));
}

}  // namespace strideweave
