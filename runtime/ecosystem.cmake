# The runtime's optional links to the performance-tool ecosystem, each built when its Debian
# package is installed (scripts/bootstrap.sh installs them all):
#   PAPI software-defined events (libsde, sde.c: docs/papi.md)
find_path(MPROF_SDE_INCLUDE sde_lib.h)
find_library(MPROF_SDE_LIBRARY sde)
if(MPROF_SDE_INCLUDE AND MPROF_SDE_LIBRARY)
  target_sources(mprof_rt PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src/sde.c)
  target_compile_definitions(mprof_rt PRIVATE MPROF_HAVE_SDE)
  target_include_directories(mprof_rt PRIVATE ${MPROF_SDE_INCLUDE})
  target_link_libraries(mprof_rt PUBLIC ${MPROF_SDE_LIBRARY})
  message(STATUS "mprof runtime: PAPI software-defined events (${MPROF_SDE_LIBRARY})")
else()
  message(STATUS "mprof runtime: libsde not found, statistics are not PAPI events")
endif()
