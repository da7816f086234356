// strideweave/strideweave.h — the umbrella header of the public API.
#pragma once

#include <strideweave/carrier.h>
#include <strideweave/carrier_class.h>
#include <strideweave/carriers/block_device.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/carriers/shipped.h>
#include <strideweave/dtype.h>
#include <strideweave/errors.h>
#include <strideweave/execution.h>
#include <strideweave/explain.h>
#include <strideweave/extension.h>
#include <strideweave/factory.h>
#include <strideweave/int128.h>
#include <strideweave/layout.h>
#include <strideweave/autograd.h>
#include <strideweave/call.h>
#include <strideweave/capability.h>
#include <strideweave/dependent_carrier.h>
#include <strideweave/operation.h>
#include <strideweave/ops.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>
#include <strideweave/threading.h>
#include <strideweave/value.h>
