# MprofInterface.cmake -- generate C statistic hooks from a performance interface (*.perf).
#
#   mprof_add_interface(<target> <file.perf>)
#
# At build time runs `${Python3_EXECUTABLE} -m mprof iface compile <file.perf>` into
# ${CMAKE_CURRENT_BINARY_DIR}/perf/, adds the generated <module>_perf.c to <target> and the
# directory (plus runtime/include, for mp.h) to its include path.  Editing the .perf file or
# the generator regenerates the hooks.  The module name (which names the files) is read
# from the file's `interface NAME` line at configure time; the .perf file is a configure
# dependency so that renaming the module re-runs CMake.

# Two homes: the source tree (cmake/ beside mprof/ and runtime/), where the generator runs
# from the sources, and an installed package (lib/cmake/mprof, docs/install.md), where it runs
# from the Python package installed for ${MPROF_PYTHON} and mp.h comes with mprof::rt.
set(_MPROF_ROOT "${CMAKE_CURRENT_LIST_DIR}/..")
get_filename_component(_MPROF_ROOT "${_MPROF_ROOT}" ABSOLUTE)
if(EXISTS "${_MPROF_ROOT}/mprof/iface/codegen.py")
  set(_MPROF_IN_TREE TRUE)
else()
  set(_MPROF_IN_TREE FALSE)
endif()

function(mprof_add_interface target perf_file)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "mprof_add_interface: '${target}' is not a target")
  endif()
  if(MPROF_PYTHON)
    set(python "${MPROF_PYTHON}")
  else()
    if(NOT Python3_EXECUTABLE)
      find_package(Python3 COMPONENTS Interpreter REQUIRED)
    endif()
    set(python "${Python3_EXECUTABLE}")
  endif()
  get_filename_component(perf "${perf_file}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${perf}")
    message(FATAL_ERROR "mprof_add_interface: ${perf} does not exist")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${perf}")

  # The first `interface NAME` outside comments names the module and the generated files.
  file(STRINGS "${perf}" header REGEX "^[ \t]*interface[ \t]+[A-Za-z_][A-Za-z0-9_]*" LIMIT_COUNT 1)
  if(NOT header MATCHES "^[ \t]*interface[ \t]+([A-Za-z_][A-Za-z0-9_]*)")
    message(FATAL_ERROR "mprof_add_interface: ${perf} has no 'interface NAME' line")
  endif()
  set(module "${CMAKE_MATCH_1}")

  set(outdir "${CMAKE_CURRENT_BINARY_DIR}/perf")
  set(header "${outdir}/${module}_perf.h")
  set(source "${outdir}/${module}_perf.c")
  set(generator_files "")
  set(env "")
  if(_MPROF_IN_TREE)
    file(GLOB generator_files CONFIGURE_DEPENDS
         "${_MPROF_ROOT}/mprof/iface/*.py" "${_MPROF_ROOT}/mprof/iface/templates/*.j2")
    set(env "PYTHONPATH=${_MPROF_ROOT}")
  endif()

  add_custom_command(
    OUTPUT "${header}" "${source}"
    COMMAND ${CMAKE_COMMAND} -E env ${env}
            "${python}" -m mprof iface compile -q -o "${outdir}" "${perf}"
    DEPENDS "${perf}" ${generator_files}
    COMMENT "mprof iface compile ${perf_file} (module ${module})"
    VERBATIM)

  target_sources(${target} PRIVATE "${header}" "${source}")
  if(_MPROF_IN_TREE)
    target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${outdir}>"
                                                "$<BUILD_INTERFACE:${_MPROF_ROOT}/runtime/include>")
  else()
    target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${outdir}>")
    if(NOT target STREQUAL "mprof_rt")
      target_link_libraries(${target} PUBLIC mprof::rt)
    endif()
  endif()
  # Term definitions may call log2/sqrt/fmin/fmax.
  if(UNIX AND NOT APPLE)
    target_link_libraries(${target} PUBLIC m)
  endif()
endfunction()
