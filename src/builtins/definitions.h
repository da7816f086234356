// Internal: the built-in OperationDefinitions (docs/design.md, "One record
// per operation").
#pragma once

namespace strideweave::builtins {

// Builds one OperationDefinition per registered operation name from the
// front end's records (frontend/call_support.h) and registers them, with
// "sort" and "topk" reserved; once, from the library bootstrap.
void register_builtin_definitions();

}  // namespace strideweave::builtins
