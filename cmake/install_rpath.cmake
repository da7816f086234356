# Relative run paths for installed binaries (docs/building.md, "Installing").
#
# strideweave_set_install_rpath(<target> <destination>)
#   <destination> is where `install(TARGETS <target> ...)` puts the file,
#   relative to the install prefix (e.g. ${CMAKE_INSTALL_BINDIR}). The
#   installed file then finds libstrideweave.so through
#   $ORIGIN/<path from destination to ${CMAKE_INSTALL_LIBDIR}>, so the
#   prefix given to `cmake --install --prefix` (or the folder it is moved to
#   afterwards) does not matter. With an absolute destination or library
#   directory no relative path exists: the absolute library directory is used.
#   A static build (STRIDEWEAVE_SHARED=OFF) links libstrideweave into each
#   binary and sets no run path.
function(strideweave_set_install_rpath target destination)
  if(NOT STRIDEWEAVE_SHARED)
    return()
  endif()
  if(IS_ABSOLUTE "${destination}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(rpath "${CMAKE_INSTALL_FULL_LIBDIR}")
  else()
    # Both relative to one (any) prefix.
    file(RELATIVE_PATH rel "/prefix/${destination}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
    if(rel STREQUAL "")
      set(rpath "$ORIGIN")
    else()
      string(REGEX REPLACE "/$" "" rel "${rel}")
      set(rpath "$ORIGIN/${rel}")
    endif()
  endif()
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "${rpath}")
endfunction()
