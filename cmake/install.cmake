# Install rules of the xattn library (included by the top CMakeLists.txt when XATTN_INSTALL is on):
#   <prefix>/include/xattn/*.hpp            the public headers only (src/xattn/); never src/kernels/
#   <prefix>/lib/libxattn.a                 the library
#   <prefix>/lib/cmake/xattn/               xattnConfig.cmake, its version file and the exported targets,
#                                           so that find_package(xattn) gives xattn::xattn
include(CMakePackageConfigHelpers)

set(XATTN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/xattn)

install(TARGETS xattn EXPORT xattnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/src/xattn/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/xattn
  FILES_MATCHING PATTERN "*.hpp")
install(EXPORT xattnTargets NAMESPACE xattn:: DESTINATION ${XATTN_CMAKE_DIR})

# The installed library takes xt::xarray by reference as laid out by the xtensor it was built against, which a
# minor release of xtensor 0.x may change: xattnConfig.cmake asks its users for that same minor release.
math(EXPR XATTN_XTENSOR_NEXT_MINOR "${xtensor_VERSION_MINOR} + 1")
set(XATTN_XTENSOR_RANGE
  "${xtensor_VERSION_MAJOR}.${xtensor_VERSION_MINOR}...<${xtensor_VERSION_MAJOR}.${XATTN_XTENSOR_NEXT_MINOR}")
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/xattnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/xattnConfig.cmake INSTALL_DESTINATION ${XATTN_CMAKE_DIR})
# Before 1.0 a minor release may change the API: only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/xattnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/xattnConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/xattnConfigVersion.cmake
  DESTINATION ${XATTN_CMAKE_DIR})
