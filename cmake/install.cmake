# cmake --install: the libraries with their headers, the CMake package (find_package(ballistic)),
# and the program. Each library target exports as ballistic::<name> (engine, scene, renderer).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(BALLISTIC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ballistic)

set(ballistic_components engine)
install(TARGETS ballistic_engine EXPORT ballisticEngineTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY engine/include/ballistic DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/ballistic/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ballistic)
install(EXPORT ballisticEngineTargets NAMESPACE ballistic:: DESTINATION ${BALLISTIC_CMAKE_DIR})

if(TARGET ballistic_scene)
  list(APPEND ballistic_components scene)
  install(TARGETS ballistic_scene EXPORT ballisticSceneTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY scene/include/ballistic DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ballisticSceneTargets NAMESPACE ballistic:: DESTINATION ${BALLISTIC_CMAKE_DIR})
endif()
if(TARGET ballistic_renderer)
  list(APPEND ballistic_components renderer)
  install(TARGETS ballistic_renderer EXPORT ballisticRendererTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY renderer/include/ballistic DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ballisticRendererTargets NAMESPACE ballistic:: DESTINATION ${BALLISTIC_CMAKE_DIR})
endif()
if(TARGET ballistic)
  install(TARGETS ballistic RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES LICENSE README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

configure_package_config_file(cmake/ballisticConfig.cmake.in ${PROJECT_BINARY_DIR}/ballisticConfig.cmake
  INSTALL_DESTINATION ${BALLISTIC_CMAKE_DIR})
# 0.x: a new minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ballisticConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ballisticConfig.cmake ${PROJECT_BINARY_DIR}/ballisticConfigVersion.cmake
  DESTINATION ${BALLISTIC_CMAKE_DIR})
