# One OBJECT library per layer of cmake/layers.txt (strideweave_layer_<name>),
# and the per-layer link check.
#
# Defines STRIDEWEAVE_LAYER_OBJECTS (every layer's objects, for the library)
# and STRIDEWEAVE_THIRD_PARTY (what the library links), and the function
# strideweave_add_layer_link_checks().

# Third-party libraries by layer: only the CPU carrier uses oneDNN and
# OpenMP; Highway also serves the movement layer.
# xxHash (storage checksums) belongs to the storage carriers, liburing to the
# system-I/O seam under them. (The policy layer hashes operation names
# with xxHash's header-only form, XXH_INLINE_ALL: no link dependency.)
find_library(STRIDEWEAVE_URING_LIBRARY NAMES uring REQUIRED)      # Debian liburing-dev
find_library(STRIDEWEAVE_XXHASH_LIBRARY NAMES xxhash REQUIRED)    # Debian libxxhash-dev
# The movement layer's zero scan (a move's before-image) is vectorised with
# Highway too.
set(STRIDEWEAVE_LAYER_LIBS_movement hwy::hwy)
set(STRIDEWEAVE_LAYER_LIBS_carriers hwy::hwy strideweave_dnnl ${STRIDEWEAVE_XXHASH_LIBRARY})
# The system-I/O seam owns liburing (src/sysio/system_io.h).
set(STRIDEWEAVE_LAYER_LIBS_sysio ${STRIDEWEAVE_URING_LIBRARY})
if(STRIDEWEAVE_OPENMP)
  list(APPEND STRIDEWEAVE_LAYER_LIBS_carriers OpenMP::OpenMP_CXX)
endif()
# The operation layer checks names as Python identifiers (str.isidentifier:
# Unicode XID_Start / XID_Continue) with ICU's character properties.
find_package(ICU REQUIRED COMPONENTS uc)                           # Debian libicu-dev
set(STRIDEWEAVE_LAYER_LIBS_operation ICU::uc)
# The formats layer parses safetensors' JSON header with nlohmann-json
# (header-only).
set(STRIDEWEAVE_LAYER_LIBS_formats nlohmann_json::nlohmann_json)
# The CUDA carrier (src/extension_carriers/cuda/) links the static CUDA
# runtime: libstrideweave then loads on machines without CUDA, and the
# driver is looked up at the first call (docs/cuda.md).
if(STRIDEWEAVE_CUDA)
  set(STRIDEWEAVE_LAYER_LIBS_extension_carriers CUDA::cudart_static ${CMAKE_DL_LIBS})  # dlopen: cuBLAS
endif()
# The library layer's seeded random tensors vectorise Philox with Highway
# (src/library/philox_batch.cpp).
set(STRIDEWEAVE_LAYER_LIBS_library hwy::hwy)

file(STRINGS ${PROJECT_SOURCE_DIR}/cmake/layers.txt strideweave_layer_lines)
set(strideweave_section "")
set(STRIDEWEAVE_LAYERS "")
foreach(line IN LISTS strideweave_layer_lines)
  string(REGEX REPLACE "#.*" "" line "${line}")
  string(STRIP "${line}" line)
  if(line STREQUAL "")
    continue()
  endif()
  if(line MATCHES "^\\[(.*)\\]$")
    set(strideweave_section "${CMAKE_MATCH_1}")
    continue()
  endif()
  if(strideweave_section STREQUAL "layers" AND line MATCHES "^([a-z_]+):(.*)$")
    set(name "${CMAKE_MATCH_1}")
    string(STRIP "${CMAKE_MATCH_2}" below)
    separate_arguments(below UNIX_COMMAND "${below}")
    # conformance/ and tools/ are layers of their own CMake projects.
    if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/src/${name})
      list(APPEND STRIDEWEAVE_LAYERS ${name})
      set(STRIDEWEAVE_LAYER_BELOW_${name} ${below})
    endif()
  endif()
endforeach()

set(STRIDEWEAVE_LAYER_OBJECTS "")
set(STRIDEWEAVE_THIRD_PARTY fmt::fmt)
foreach(layer IN LISTS STRIDEWEAVE_LAYERS)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${layer}/*.cpp)
  # CUDA (docs/cuda.md, docs/building.md): with the toolkit, a layer's *.cu
  # files are its device code (one more object library, compiled by nvcc with
  # the flags below) and its *_cudart.cpp files call the CUDA runtime; without
  # it, each *_absent.cpp stands in for them.
  set(cuda_objects "")
  if(STRIDEWEAVE_CUDA)
    list(FILTER sources EXCLUDE REGEX "_absent\\.cpp$")
    file(GLOB_RECURSE cuda_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${layer}/*.cu)
    if(cuda_sources)
      add_library(strideweave_layer_${layer}_cuda OBJECT ${cuda_sources})
      target_include_directories(strideweave_layer_${layer}_cuda PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
      # -fmad=false: no fused multiply-add contraction (Arithmetic::BINARY32,
      # as -ffp-contract=off for the host code); IEEE division and square
      # root are nvcc's defaults and stay on.
      target_compile_options(strideweave_layer_${layer}_cuda PRIVATE -fmad=false
        $<$<BOOL:${STRIDEWEAVE_WARNINGS_AS_ERRORS}>:-Werror=all-warnings> -Xcompiler=-Wall,-Wextra)
      set_target_properties(strideweave_layer_${layer}_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON
        CUDA_VISIBILITY_PRESET hidden)
      set(cuda_objects $<TARGET_OBJECTS:strideweave_layer_${layer}_cuda>)
    endif()
  else()
    list(FILTER sources EXCLUDE REGEX "_cudart\\.cpp$")
  endif()
  set(STRIDEWEAVE_LAYER_CUDA_OBJECTS_${layer} ${cuda_objects})
  add_library(strideweave_layer_${layer} OBJECT ${sources})
  target_include_directories(strideweave_layer_${layer} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(strideweave_layer_${layer} PRIVATE fmt::fmt ${STRIDEWEAVE_LAYER_LIBS_${layer}} strideweave_flags)
  # Only what the public headers declare is exported (include/strideweave/export.h).
  set_target_properties(strideweave_layer_${layer} PROPERTIES POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  # The library's own calls to its exported functions (Tensor::layout,
  # DType::Float32, ...) bind directly and may be inlined: nothing
  # interposes them (no LD_PRELOAD replacement is supported), and the
  # default, interposable binding made each one a PLT call (docs/building.md).
  target_compile_options(strideweave_layer_${layer} PRIVATE
    $<$<OR:$<CXX_COMPILER_ID:GNU>,$<CXX_COMPILER_ID:Clang>>:-fno-semantic-interposition>)
  if(STRIDEWEAVE_SHARED)
    target_compile_definitions(strideweave_layer_${layer} PRIVATE strideweave_EXPORTS)
  endif()
  list(APPEND STRIDEWEAVE_LAYER_OBJECTS $<TARGET_OBJECTS:strideweave_layer_${layer}> ${cuda_objects})
  foreach(lib IN LISTS STRIDEWEAVE_LAYER_LIBS_${layer})
    list(APPEND STRIDEWEAVE_THIRD_PARTY $<BUILD_INTERFACE:${lib}>)
  endforeach()
endforeach()
list(REMOVE_DUPLICATES STRIDEWEAVE_THIRD_PARTY)

# Each layer linked as a shared object with --no-undefined from its own
# objects and the objects of the layers below it only (transitively): a
# symbol that a layer uses but only a higher layer defines fails the build.
# Objects rather than lower check libraries, because internal symbols are
# hidden (export.h) and would not link across shared objects. (Sanitizer
# runtimes leave symbols undefined in shared objects, so sanitized builds
# skip the check.)
function(strideweave_layers_below layer out)
  set(result "")
  foreach(b IN LISTS STRIDEWEAVE_LAYER_BELOW_${layer})
    strideweave_layers_below(${b} deeper)
    list(APPEND result ${b} ${deeper})
  endforeach()
  list(REMOVE_DUPLICATES result)
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(strideweave_add_layer_link_checks)
  if(STRIDEWEAVE_SANITIZE)
    return()
  endif()
  foreach(layer IN LISTS STRIDEWEAVE_LAYERS)
    strideweave_layers_below(${layer} below)
    set(objects $<TARGET_OBJECTS:strideweave_layer_${layer}> ${STRIDEWEAVE_LAYER_CUDA_OBJECTS_${layer}})
    set(libs "")
    foreach(b IN LISTS below)
      list(APPEND objects $<TARGET_OBJECTS:strideweave_layer_${b}> ${STRIDEWEAVE_LAYER_CUDA_OBJECTS_${b}})
      list(APPEND libs ${STRIDEWEAVE_LAYER_LIBS_${b}})
    endforeach()
    add_library(strideweave_layercheck_${layer} SHARED ${objects})
    target_link_libraries(strideweave_layercheck_${layer} PRIVATE fmt::fmt ${STRIDEWEAVE_LAYER_LIBS_${layer}} ${libs})
    target_link_options(strideweave_layercheck_${layer} PRIVATE -Wl,--no-undefined)
    set_target_properties(strideweave_layercheck_${layer} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/layercheck)
  endforeach()
endfunction()
