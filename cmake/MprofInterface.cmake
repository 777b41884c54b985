# MprofInterface.cmake -- generate C statistic hooks from a performance interface (*.perf).
#
#   mprof_add_interface(<target> <file.perf>)
#
# At build time runs `mprof iface compile <file.perf>` (_mprof_generator below) into
# ${CMAKE_CURRENT_BINARY_DIR}/perf/, adds the generated <module>_perf.c to <target> and the
# directory (plus runtime/include, for mp.h) to its include path.  Editing the .perf file or
# the generator regenerates the hooks.  The module name (which names the files) is read
# from the file's `interface NAME` line at configure time; the .perf file is a configure
# dependency so that renaming the module re-runs CMake.

# Two homes: the source tree (cmake/ beside mprof/ and runtime/), where the generator runs
# from the sources, and an installed package (lib/cmake/mprof, docs/install.md), where it runs
# from an installed mprof Python package and mp.h comes with mprof::rt.
set(_MPROF_ROOT "${CMAKE_CURRENT_LIST_DIR}/..")
get_filename_component(_MPROF_ROOT "${_MPROF_ROOT}" ABSOLUTE)
if(EXISTS "${_MPROF_ROOT}/mprof/iface/codegen.py")
  set(_MPROF_IN_TREE TRUE)
else()
  set(_MPROF_IN_TREE FALSE)
endif()

# The command that runs the generator (`<python> -m mprof` or `mprof`), in `out`: in the source
# tree the configured Python on the sources; installed, MPROF_PYTHON if set, else the `mprof`
# command (MPROF_COMMAND: on PATH or in the package's prefix), else a Python 3 that imports
# mprof.
function(_mprof_generator out)
  if(MPROF_PYTHON)
    set(${out} "${MPROF_PYTHON}" -m mprof PARENT_SCOPE)
    return()
  endif()
  if(NOT _MPROF_IN_TREE)
    find_program(MPROF_COMMAND mprof HINTS "${_MPROF_ROOT}/../../bin"
                 DOC "the mprof command (its Python package generates the statistic hooks)")
    if(MPROF_COMMAND)
      set(${out} "${MPROF_COMMAND}" PARENT_SCOPE)
      return()
    endif()
  endif()
  if(NOT Python3_EXECUTABLE)
    find_package(Python3 COMPONENTS Interpreter REQUIRED)
  endif()
  if(NOT _MPROF_IN_TREE)
    # (in the build folder: `python -c` also imports from its working folder)
    execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import mprof" RESULT_VARIABLE failed
                    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}" OUTPUT_QUIET ERROR_QUIET)
    if(failed)
      message(FATAL_ERROR
              "mprof_add_interface: no mprof command on PATH and ${Python3_EXECUTABLE} has no "
              "mprof package: put mprof on PATH (activate its virtual environment), or set "
              "-DMPROF_COMMAND=/path/to/mprof or -DMPROF_PYTHON=/path/to/python (docs/install.md)")
    endif()
  endif()
  set(${out} "${Python3_EXECUTABLE}" -m mprof PARENT_SCOPE)
endfunction()

function(mprof_add_interface target perf_file)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "mprof_add_interface: '${target}' is not a target")
  endif()
  _mprof_generator(generator)
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
            ${generator} iface compile -q -o "${outdir}" "${perf}"
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

# mprof_add_sde_listing(<target> <file.perf>...)
#
# A shared library <target> whose papi_sde_hook_list_events lists the PAPI software-defined
# events of the interfaces' statistics (sde:::MPROF::<module>::<statistic>, with their
# descriptions), for `papi_native_avail -sde lib<target>.so` (docs/papi.md): the runtime is a
# static library inside an executable, which PAPI's tools cannot load.  Needs PAPI's libsde.
function(mprof_add_sde_listing target)
  find_path(MPROF_SDE_INCLUDE sde_lib.h)
  find_library(MPROF_SDE_LIBRARY sde)
  if(NOT MPROF_SDE_INCLUDE OR NOT MPROF_SDE_LIBRARY)
    message(FATAL_ERROR "mprof_add_sde_listing: PAPI's sde_lib.h and libsde are needed")
  endif()
  _mprof_generator(generator)
  set(perfs "")
  foreach(f IN LISTS ARGN)
    get_filename_component(perf "${f}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND perfs "${perf}")
  endforeach()
  set(env "")
  set(generator_files "")
  if(_MPROF_IN_TREE)
    set(env "PYTHONPATH=${_MPROF_ROOT}")
    file(GLOB generator_files CONFIGURE_DEPENDS "${_MPROF_ROOT}/mprof/iface/*.py")
  endif()
  set(source "${CMAKE_CURRENT_BINARY_DIR}/${target}_sde_events.c")
  add_custom_command(
    OUTPUT "${source}"
    COMMAND ${CMAKE_COMMAND} -E env ${env} ${generator} iface sde-events --c "${source}" ${perfs}
    DEPENDS ${perfs} ${generator_files}
    COMMENT "mprof iface sde-events --c ${source}"
    VERBATIM)
  add_library(${target} SHARED "${source}")
  target_include_directories(${target} PRIVATE "${MPROF_SDE_INCLUDE}")
  target_link_libraries(${target} PRIVATE "${MPROF_SDE_LIBRARY}")
endfunction()
