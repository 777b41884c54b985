# MprofInstall.cmake -- `cmake --install` rules: the runtime and the instrumented library as
# static libraries with their public headers, a CMake package (find_package(mprof) giving
# mprof::rt, mprof::<structure> and mprof_add_interface) and a pkg-config file (mprof.pc).
# Included last from the top-level CMakeLists.txt, once every target exists, so the targets'
# own CMakeLists.txt need not know about installation (docs/install.md).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MPROF_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/mprof")
set(MPROF_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/mprof")

# Include directories given as build-tree paths become the installed header folder.
function(_mprof_installable target export_name)
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped "")
  foreach(d IN LISTS dirs)
    if(d MATCHES "^\\$<")
      list(APPEND wrapped "${d}")
    else()
      list(APPEND wrapped "$<BUILD_INTERFACE:${d}>")
    endif()
  endforeach()
  list(APPEND wrapped "$<INSTALL_INTERFACE:${MPROF_INSTALL_INCLUDEDIR}>")
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${wrapped}"
                                             EXPORT_NAME ${export_name})
  add_library(mprof::${export_name} ALIAS ${target})
endfunction()

set(_mprof_targets mprof_rt)
_mprof_installable(mprof_rt rt)
# Libraries CMake found by path (libsde, libotf2, libpapi: runtime/ecosystem.cmake) are linked
# by name in the installed package, so that it names no folder of the build machine.
get_target_property(_rt_libs mprof_rt INTERFACE_LINK_LIBRARIES)
set(_rt_wrapped "")
foreach(l IN LISTS _rt_libs)
  if(l MATCHES "^/.*/lib([^/]+)\\.so$")
    list(APPEND _rt_wrapped "$<BUILD_INTERFACE:${l}>" "$<INSTALL_INTERFACE:${CMAKE_MATCH_1}>")
  else()
    list(APPEND _rt_wrapped "${l}")
  endif()
endforeach()
set_target_properties(mprof_rt PROPERTIES INTERFACE_LINK_LIBRARIES "${_rt_wrapped}")
install(FILES ${CMAKE_SOURCE_DIR}/runtime/include/mp.h DESTINATION ${MPROF_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/runtime/rts.perf DESTINATION ${CMAKE_INSTALL_DATADIR}/mprof/perf)

# The instrumented data structures: library, public header, performance interface.
foreach(lib eventgraph hashtable taskstealer bipartite)
  if(TARGET mprof_${lib})
    _mprof_installable(mprof_${lib} ${lib})
    list(APPEND _mprof_targets mprof_${lib})
    install(FILES ${CMAKE_SOURCE_DIR}/instrumented-lib/${lib}/${lib}.h
            DESTINATION ${MPROF_INSTALL_INCLUDEDIR})
    file(GLOB _perf "${CMAKE_SOURCE_DIR}/instrumented-lib/${lib}/*.perf")
    install(FILES ${_perf} DESTINATION ${CMAKE_INSTALL_DATADIR}/mprof/perf)
  endif()
endforeach()

# The PAPI software-defined events of the runtime and the structures, listable without running
# a program: papi_native_avail -sde <prefix>/lib/libmprof_sde_events.so (docs/papi.md).
if(MPROF_OBSERVERS AND MPROF_SDE_INCLUDE AND MPROF_SDE_LIBRARY)
  file(GLOB _sde_perfs "${CMAKE_SOURCE_DIR}/instrumented-lib/*/*.perf")
  mprof_add_sde_listing(mprof_sde_events ${CMAKE_SOURCE_DIR}/runtime/rts.perf ${_sde_perfs})
  install(TARGETS mprof_sde_events LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

install(TARGETS ${_mprof_targets} EXPORT mprofTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${MPROF_INSTALL_INCLUDEDIR})
install(EXPORT mprofTargets NAMESPACE mprof:: DESTINATION ${MPROF_INSTALL_CMAKEDIR})

# find_package(MPI) ran in runtime/'s scope: its result shows in the runtime's dependencies.
if("MPI::MPI_C" IN_LIST _rt_libs)
  set(MPROF_CONFIG_HAVE_MPI TRUE)
else()
  set(MPROF_CONFIG_HAVE_MPI FALSE)
endif()
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/mprofConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/mprofConfig.cmake
                              INSTALL_DESTINATION ${MPROF_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/mprofConfigVersion.cmake
                                 VERSION 0.1.0 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/mprofConfig.cmake ${CMAKE_BINARY_DIR}/mprofConfigVersion.cmake
              ${CMAKE_SOURCE_DIR}/cmake/MprofInterface.cmake
        DESTINATION ${MPROF_INSTALL_CMAKEDIR})

# pkg-config: the libraries are static, so everything they need goes into Libs (MPI's flags
# come from Open MPI's own ompi-c.pc through Requires).
set(MPROF_PC_REQUIRES "")
if(MPROF_CONFIG_HAVE_MPI)
  set(MPROF_PC_REQUIRES "ompi-c")
endif()
set(MPROF_PC_EXTRA_LIBS "")
list(REMOVE_DUPLICATES _rt_libs)
foreach(l IN LISTS _rt_libs)
  if(l MATCHES "^[A-Za-z0-9_+-]+$" AND NOT TARGET ${l})
    string(APPEND MPROF_PC_EXTRA_LIBS " -l${l}")
  elseif(l MATCHES "^/.*/lib([^/]+)\\.so$")
    # a library CMake found by path (libsde, libotf2, libpapi: runtime/ecosystem.cmake)
    string(APPEND MPROF_PC_EXTRA_LIBS " -l${CMAKE_MATCH_1}")
  endif()
endforeach()
set(MPROF_PC_LIBS "")
foreach(lib eventgraph hashtable taskstealer bipartite)
  if(TARGET mprof_${lib})
    string(APPEND MPROF_PC_LIBS " -lmprof_${lib}")
  endif()
endforeach()
configure_file(${CMAKE_SOURCE_DIR}/cmake/mprof.pc.in ${CMAKE_BINARY_DIR}/mprof.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/mprof.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
