# subdirectory_test.cmake - builds tests/package/subdirectory (kdsl by add_subdirectory) and runs its program
#
#   cmake -DKDSL_SOURCE_DIR=<kdsl source> -DWORK_DIR=<scratch> -DGENERATOR=<generator> -DCC=<C compiler>
#         -DCXX=<C++ compiler> -DBUILD_TYPE=<type> -DFINGERPRINT=<fingerprint> -P subdirectory_test.cmake
#
# WORK_DIR is kept between runs, so a second run rebuilds only what changed.
include(${CMAKE_CURRENT_LIST_DIR}/package_test_util.cmake)
kdsl_package_require_vars(KDSL_SOURCE_DIR WORK_DIR GENERATOR CC CXX BUILD_TYPE FINGERPRINT)

kdsl_package_run("configure an outer project that adds kdsl by add_subdirectory"
  COMMAND ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/subdirectory -B ${WORK_DIR} -G ${GENERATOR}
          -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
          -DKDSL_SOURCE_DIR=${KDSL_SOURCE_DIR})
kdsl_package_run("build it" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR})

# The fingerprint hashes kdsl's sources, not the outer project's: the same as kdsl's own build,
# never the hash of an empty list.
file(STRINGS ${WORK_DIR}/kdsl/generated/kdsl_version.h version_line REGEX "KDSL_VERSION_STRING")
if(version_line MATCHES "e3b0c44298fc1c14")
  message(FATAL_ERROR "under add_subdirectory the compiler fingerprint hashes an empty list: ${version_line}")
endif()
if(NOT version_line MATCHES "\\+${FINGERPRINT}\"")
  message(FATAL_ERROR "under add_subdirectory the compiler fingerprint differs from kdsl's own build (${FINGERPRINT}): ${version_line}")
endif()

set(ENV{KDSL_CACHE_DIR} ${WORK_DIR}/cache)
kdsl_package_run("run the outer project's program" COMMAND ${WORK_DIR}/scaled_add OUTPUT output)
message(STATUS "${output}")
if(NOT output MATCHES "matches the scalar loop")
  message(FATAL_ERROR "the program exited 0 without reporting a match:\n${output}")
endif()
