# cmake --install: the libraries with their headers, the CMake package (find_package(ballistic)),
# and the program. Each library target exports as ballistic::<name> (engine, scene, renderer).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(BALLISTIC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ballistic)

# ballistic_install_library(target component include_dir): the library, its headers and its
# export set ballistic<Component>Targets.cmake, which ballisticConfig.cmake includes.
set(ballistic_components)
function(ballistic_install_library target component include_dir)
  string(SUBSTRING ${component} 0 1 first)
  string(TOUPPER ${first} first)
  string(SUBSTRING ${component} 1 -1 rest)
  install(TARGETS ${target} EXPORT ballistic${first}${rest}Targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${include_dir}/ballistic DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
  install(EXPORT ballistic${first}${rest}Targets NAMESPACE ballistic:: DESTINATION ${BALLISTIC_CMAKE_DIR})
  set(ballistic_components ${ballistic_components} ${component} PARENT_SCOPE)
endfunction()

ballistic_install_library(ballistic_engine engine engine/include)
install(FILES ${PROJECT_BINARY_DIR}/include/ballistic/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ballistic)
if(TARGET ballistic_scene)
  ballistic_install_library(ballistic_scene scene scene/include)
endif()
if(TARGET ballistic_renderer)
  ballistic_install_library(ballistic_renderer renderer renderer/include)
endif()
if(TARGET ballistic)
  install(TARGETS ballistic RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES LICENSE README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

configure_package_config_file(cmake/ballisticConfig.cmake.in ${PROJECT_BINARY_DIR}/ballisticConfig.cmake
  INSTALL_DESTINATION ${BALLISTIC_CMAKE_DIR})
# 0.x: a new minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ballisticConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ballisticConfig.cmake ${PROJECT_BINARY_DIR}/ballisticConfigVersion.cmake
  DESTINATION ${BALLISTIC_CMAKE_DIR})
