# KdslInstall.cmake - install rules (GNUInstallDirs) and the relocatable CMake package kdsl::kdsl
#
# Installed: include/kdsl/** (the public API), libkdsl.so, the command-line tools when built,
# and lib/cmake/kdsl/{kdslConfig,kdslConfigVersion,kdslTargets}.cmake. Every path in the package
# is relative to the prefix, so the installed tree can be moved or copied elsewhere.
include(CMakePackageConfigHelpers)

set(KDSL_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kdsl)

# The tools find libkdsl.so next to them wherever the prefix goes ($ORIGIN); libkdsl.so and the
# tools keep the directories of libraries found outside the system paths (say a custom LLVM).
file(RELATIVE_PATH kdsl_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set(kdsl_tools kdsl-run kdsl-compile kdsl-cache kdsl-bench kdsl-bench-engine kdsl-bench-cuda kdsl-tokenize kdsl-synth kdsl-quantize)
set(kdsl_installed_tools "")
foreach(tool ${kdsl_tools})
  if(TARGET ${tool})
    list(APPEND kdsl_installed_tools ${tool})
  endif()
endforeach()
set_target_properties(kdsl ${kdsl_installed_tools} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
if(kdsl_installed_tools)
  set_target_properties(${kdsl_installed_tools} PROPERTIES INSTALL_RPATH "$ORIGIN/${kdsl_bin_to_lib}")
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kdsl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set_target_properties(kdsl PROPERTIES EXPORT_NAME kdsl)
install(TARGETS kdsl EXPORT kdslTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(kdsl_installed_tools)
  install(TARGETS ${kdsl_installed_tools} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT kdslTargets NAMESPACE kdsl:: DESTINATION ${KDSL_CMAKE_INSTALL_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/kdslConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/kdslConfig.cmake
  INSTALL_DESTINATION ${KDSL_CMAKE_INSTALL_DIR})
# 0.x: a new minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/kdslConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/kdslConfig.cmake ${PROJECT_BINARY_DIR}/package/kdslConfigVersion.cmake
  DESTINATION ${KDSL_CMAKE_INSTALL_DIR})
