# The installable package (docs/EMBEDDING.md): `cmake --install <build> --prefix P` puts in P
#   bin/vtrace                          the command (cli/CMakeLists.txt)
#   lib/libvtrace_{runtime,schema,recorder,replayer,drift,report}.a
#   include/vtrace/<library>/...        each library's include/ tree; the flatc headers of
#                                       schema/*.fbs beside the schema headers that include them
#   share/vtrace/*.fbs                  the schema files
#   lib/cmake/vtrace/                   find_package(vtrace CONFIG): vtrace::runtime, ::schema,
#                                       ::recorder, ::replayer, ::drift, ::report, the executable
#                                       vtrace::vtrace, vtrace_add_replay_test()
#   lib/pkgconfig/vtrace.pc             for builds without CMake
# Nothing of tests/, bench/ or workloads/ is installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VTRACE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/vtrace)
set(VTRACE_INSTALL_SCHEMADIR ${CMAKE_INSTALL_DATADIR}/vtrace)

# vtrace_package_library(<target> <export-name>): <target> is one library of the package. Its
# public headers (include/ beside the calling CMakeLists.txt) are on its include path in the build
# and under the prefix, the tree is installed, and the library is exported as vtrace::<export-name>
# (the name of its alias in the build).
function(vtrace_package_library target export_name)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  install(TARGETS ${target} EXPORT vtraceTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h")
endfunction()

# The package-wide files; called once, after every library and the vtrace executable exist.
function(vtrace_install_package)
  # Inside this build the command has the name it has under find_package(vtrace), so
  # vtrace_add_replay_test() is one function for both.
  add_executable(vtrace::vtrace ALIAS vtrace)
  install(EXPORT vtraceTargets NAMESPACE vtrace:: DESTINATION ${VTRACE_INSTALL_CMAKEDIR})

  set(out ${PROJECT_BINARY_DIR}/package)
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vtraceConfig.cmake.in
                                ${out}/vtraceConfig.cmake
                                INSTALL_DESTINATION ${VTRACE_INSTALL_CMAKEDIR}
                                PATH_VARS VTRACE_INSTALL_SCHEMADIR)
  # 0.x: a new minor version may change the interface, so only the same minor is compatible.
  write_basic_package_version_file(${out}/vtraceConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                   COMPATIBILITY SameMinorVersion)
  install(FILES ${out}/vtraceConfig.cmake ${out}/vtraceConfigVersion.cmake
                ${PROJECT_SOURCE_DIR}/cmake/VtraceDependencies.cmake
                ${PROJECT_SOURCE_DIR}/cmake/VtraceReplayTest.cmake
          DESTINATION ${VTRACE_INSTALL_CMAKEDIR})

  # vtrace.pc finds its prefix from its own place (${pcfiledir}), so it is right under whatever
  # prefix `cmake --install --prefix` chose.
  cmake_path(RELATIVE_PATH CMAKE_INSTALL_PREFIX
             BASE_DIRECTORY ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig
             OUTPUT_VARIABLE VTRACE_PC_PREFIX_FROM_PCFILEDIR)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/vtrace.pc.in ${out}/vtrace.pc @ONLY)
  install(FILES ${out}/vtrace.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
