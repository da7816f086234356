// strideweave/int128.h — the exact wide integer used for weak scalars and
// exact integer accumulation (GCC and Clang on 64-bit targets).
#pragma once

#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {
__extension__ typedef __int128 int128;
}

STRIDEWEAVE_PUBLIC_END
