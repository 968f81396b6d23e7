# KdslFingerprint.cmake - the compiler's fingerprint: a hash of every source that decides generated code
#
# kdsl_codegen_fingerprint(<out-var>) hashes src/codegen, src/ir and ops.def under
# PROJECT_SOURCE_DIR (never CMAKE_SOURCE_DIR: under add_subdirectory or FetchContent that is the
# outer project, and the glob would hash an empty list). The result goes into every kernel cache
# key (generated/kdsl_version.h), so a changed compiler never loads kernels an older one cached;
# CMake re-runs when any hashed file changes.

# The hash of an empty list of inputs: a fingerprint equal to it means nothing was hashed.
set(KDSL_EMPTY_FINGERPRINT e3b0c44298fc1c14)

function(kdsl_codegen_fingerprint out_var)
  set(root ${PROJECT_SOURCE_DIR})
  file(GLOB_RECURSE inputs CONFIGURE_DEPENDS
    ${root}/src/codegen/*.cpp ${root}/src/codegen/*.h ${root}/src/ir/*.cpp ${root}/src/ir/*.h)
  if(inputs STREQUAL "")
    message(FATAL_ERROR "kdsl: the compiler fingerprint found no sources under ${root}/src/codegen and "
                        "${root}/src/ir: PROJECT_SOURCE_DIR must be kdsl's source tree")
  endif()
  list(SORT inputs)
  # ops.def is named, not globbed, so that a missing one is an error rather than a smaller hash.
  foreach(required src/codegen/pipeline.cpp src/ir/ir.cpp include/kdsl/detail/ops.def)
    if(NOT EXISTS ${root}/${required})
      message(FATAL_ERROR "kdsl: the compiler fingerprint needs ${root}/${required}, which is missing")
    endif()
  endforeach()
  list(APPEND inputs ${root}/include/kdsl/detail/ops.def)

  set(text "")
  foreach(f ${inputs})
    file(SHA256 ${f} h)
    file(RELATIVE_PATH name ${root} ${f})
    string(APPEND text "${name} ${h}\n")
    set_property(DIRECTORY ${root} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${f})
  endforeach()
  string(SHA256 fingerprint "${text}")
  string(SUBSTRING ${fingerprint} 0 16 fingerprint)
  if(fingerprint STREQUAL KDSL_EMPTY_FINGERPRINT)
    message(FATAL_ERROR "kdsl: the compiler fingerprint hashed no sources (${root}/src/codegen is empty?)")
  endif()
  list(LENGTH inputs count)
  message(STATUS "kdsl compiler fingerprint ${fingerprint} (${count} sources)")
  set(${out_var} ${fingerprint} PARENT_SCOPE)
endfunction()
