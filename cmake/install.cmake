# Install rules for the header-only library (included when BF16EMU_INSTALL is ON).
#   cmake --install build --prefix /opt/bf16emu
# then, in a consumer:  find_package(bf16emu 0.1 CONFIG REQUIRED)
#                       target_link_libraries(app PRIVATE bf16emu::bf16emu)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(BF16EMU_CMAKE_DIR ${CMAKE_INSTALL_DATADIR}/cmake/bf16emu CACHE STRING
    "Where bf16emuConfig.cmake is installed, relative to the prefix")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.cuh")

# INCLUDES DESTINATION puts <prefix>/include on the exported target's include path.
install(TARGETS bf16emu EXPORT bf16emuTargets INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT bf16emuTargets NAMESPACE bf16emu:: FILE bf16emuTargets.cmake DESTINATION ${BF16EMU_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/bf16emuConfig.cmake.in
  ${PROJECT_BINARY_DIR}/bf16emuConfig.cmake INSTALL_DESTINATION ${BF16EMU_CMAKE_DIR})
# Header-only: the same package serves any architecture.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/bf16emuConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/bf16emuConfig.cmake ${PROJECT_BINARY_DIR}/bf16emuConfigVersion.cmake
        DESTINATION ${BF16EMU_CMAKE_DIR})
