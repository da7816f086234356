# One CTest test per GoogleTest suite (docs/building.md, "Tests").
#
# strideweave_add_gtest_suites(<target> TIMEOUT <seconds> [DISCOVERY_TIMEOUT <seconds>])
#
# After every build of <target>, its suites are listed (--gtest_list_tests)
# and one CTest test per suite is registered, named after the suite and
# running `<target> --gtest_filter=<suite>.*`: one process per suite, not per
# case (gtest_discover_tests' one process per case spent most of a sanitizer
# leg starting processes). A new test file or suite is picked up by the next
# build, with no list kept by hand. A failing test prints the whole suite's
# GoogleTest output under `ctest --output-on-failure`, which names each
# failing case ("[  FAILED  ] Suite.Case") with its message.
#
# A suite whose cases are all disabled (DISABLED_) is registered disabled.
function(strideweave_add_gtest_suites target)
  cmake_parse_arguments(arg "" "TIMEOUT;DISCOVERY_TIMEOUT" "" ${ARGN})
  if(NOT arg_DISCOVERY_TIMEOUT)
    set(arg_DISCOVERY_TIMEOUT 600)
  endif()
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}"
            -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "WORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}"
            -D "CTEST_FILE=${ctest_file}"
            -D "TIMEOUT=${arg_TIMEOUT}"
            -D "DISCOVERY_TIMEOUT=${arg_DISCOVERY_TIMEOUT}"
            -P "${PROJECT_SOURCE_DIR}/cmake/gtest_suites_discover.cmake"
    BYPRODUCTS "${ctest_file}"
    COMMENT "Listing the GoogleTest suites of ${target}"
    VERBATIM)
  # A change of the discovery script relinks the program, which runs it again.
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${PROJECT_SOURCE_DIR}/cmake/gtest_suites_discover.cmake")
  file(WRITE "${include_file}"
    "if(EXISTS \"${ctest_file}\")\n"
    "  include(\"${ctest_file}\")\n"
    "else()\n"
    "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
