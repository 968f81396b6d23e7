# install_test.cmake - installs kdsl to a fresh prefix, moves it, and builds and runs examples/standalone against it
#
#   cmake -DKDSL_BINARY_DIR=<kdsl build> -DKDSL_SOURCE_DIR=<kdsl source> -DWORK_DIR=<scratch>
#         -DGENERATOR=<generator> -DCXX=<compiler> -DVERSION_STRING=<0.1.0+fingerprint>
#         -DLIBDIR=<lib> -DINCLUDEDIR=<include> -P install_test.cmake
#
# The prefix is moved after installing, so a path into the build tree or the first prefix left
# anywhere in the package (the CMake files, the tools' RUNPATH) fails the test.
include(${CMAKE_CURRENT_LIST_DIR}/package_test_util.cmake)
kdsl_package_require_vars(KDSL_BINARY_DIR KDSL_SOURCE_DIR WORK_DIR GENERATOR CXX VERSION_STRING LIBDIR INCLUDEDIR)

file(REMOVE_RECURSE ${WORK_DIR})
kdsl_package_run("cmake --install" COMMAND ${CMAKE_COMMAND} --install ${KDSL_BINARY_DIR} --prefix ${WORK_DIR}/first-prefix)
file(RENAME ${WORK_DIR}/first-prefix ${WORK_DIR}/prefix)
set(prefix ${WORK_DIR}/prefix)

set(libdir ${prefix}/${LIBDIR})
foreach(f ${INCLUDEDIR}/kdsl/kdsl.h ${INCLUDEDIR}/kdsl/detail/ops.def ${LIBDIR}/libkdsl.so
          ${LIBDIR}/cmake/kdsl/kdslConfig.cmake ${LIBDIR}/cmake/kdsl/kdslConfigVersion.cmake ${LIBDIR}/cmake/kdsl/kdslTargets.cmake
          bin/kdsl-run bin/kdsl-compile bin/kdsl-cache bin/kdsl-tokenize bin/kdsl-synth)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install is missing ${f}")
  endif()
endforeach()
# Only the public API is installed: no internal header (src/) and no test or example.
file(GLOB_RECURSE installed RELATIVE ${prefix} ${prefix}/*)
foreach(f ${installed})
  if(f MATCHES "(^|/)(codegen|frontend|runtime|jit_cache|support)/|kdsl_tests|example_")
    message(FATAL_ERROR "the install holds ${f}, which is not part of kdsl's public package")
  endif()
endforeach()
file(GLOB package_files ${libdir}/cmake/kdsl/*.cmake)
foreach(f ${package_files})
  file(READ ${f} text)
  foreach(path ${WORK_DIR}/first-prefix ${KDSL_BINARY_DIR} ${KDSL_SOURCE_DIR})
    string(FIND "${text}" "${path}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} names ${path}: the package is not relocatable")
    endif()
  endforeach()
endforeach()

kdsl_package_run("configure examples/standalone against the prefix"
  COMMAND ${CMAKE_COMMAND} -S ${KDSL_SOURCE_DIR}/examples/standalone -B ${WORK_DIR}/app -G ${GENERATOR}
          -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
kdsl_package_run("build examples/standalone" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/app)
set(ENV{KDSL_CACHE_DIR} ${WORK_DIR}/cache)
kdsl_package_run("run examples/standalone" COMMAND ${WORK_DIR}/app/scaled_add OUTPUT output)
message(STATUS "${output}")
if(NOT output MATCHES "matches the scalar loop")
  message(FATAL_ERROR "examples/standalone exited 0 without reporting a match:\n${output}")
endif()

# The kernel the installed library compiled is cached under the fingerprint of the sources it
# was built from: the build tree's own.
kdsl_package_cached_versions(${WORK_DIR}/cache versions)
if(NOT versions STREQUAL VERSION_STRING)
  message(FATAL_ERROR "the installed kdsl cached its kernel under kdsl_version '${versions}', expected '${VERSION_STRING}'")
endif()
message(STATUS "the installed kdsl caches kernels as kdsl ${versions}")

# An installed tool runs from the moved prefix (it finds libkdsl.so through $ORIGIN) and reads
# the entry the example's kernel left in the cache.
kdsl_package_run("installed kdsl-cache" COMMAND ${prefix}/bin/kdsl-cache --cache-dir ${WORK_DIR}/cache list OUTPUT listing)
if(NOT listing MATCHES "scaled_add")
  message(FATAL_ERROR "the installed kdsl-cache does not list the example's kernel:\n${listing}")
endif()
