# `cmake --install`: the public headers, the libraries, the `recourse` command, a CMake config
# package (find_package(recourse) -> recourse::recourse) and a pkg-config file (recourse.pc).
#
# Layout from GNUInstallDirs (include/recourse/, lib/ or lib/<multiarch>/, bin/); both package
# files are relocatable, so `cmake --install build --prefix DIR` works for any DIR. The library's
# own dependencies stay private, but a static archive needs them at the consumer's link step:
# recourseConfig.cmake finds them with find_dependency and recourse.pc names them (fmt, and
# sqlite3 and hiredis when the stores are built in).
# PEGTL and nlohmann_json are header-only inside the library and are not needed by consumers.
# scripts/consumer.sh builds examples/host.cpp against an installed tree both ways.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(RECOURSE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/recourse)

# Every installed library, exported as recourse::<target>: a new library target (the C ABI's,
# say) is one more name on this list.
install(TARGETS recourse recourse_c
  EXPORT recourseTargets
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# With BUILD_SHARED_LIBS=ON the installed command finds librecourse.so beside it.
set_target_properties(recourse_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS recourse_cli)
install(DIRECTORY engine/include/recourse DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT recourseTargets NAMESPACE recourse:: DESTINATION ${RECOURSE_CMAKE_DIR})
configure_package_config_file(cmake/recourseConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/recourseConfig.cmake
  INSTALL_DESTINATION ${RECOURSE_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/recourseConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/recourseConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/recourseConfigVersion.cmake
        DESTINATION ${RECOURSE_CMAKE_DIR})

# recourse.pc finds the prefix from its own place (${pcfiledir}). A static library's
# dependencies go to Requires, so a plain `pkg-config --libs recourse` links; a shared one keeps
# them in Requires.private.
get_target_property(RECOURSE_LIBRARY_TYPE recourse TYPE)
if(RECOURSE_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  set(RECOURSE_PC_REQUIRES "Requires")
else()
  set(RECOURSE_PC_REQUIRES "Requires.private")
endif()
set(RECOURSE_PC_DEPENDS "fmt")
if(RECOURSE_SIMDJSON)
  string(APPEND RECOURSE_PC_DEPENDS " simdjson")
endif()
if(RECOURSE_SQLITE)
  string(APPEND RECOURSE_PC_DEPENDS " sqlite3")
endif()
if(RECOURSE_REDIS)
  string(APPEND RECOURSE_PC_DEPENDS " hiredis")
endif()
file(RELATIVE_PATH RECOURSE_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" RECOURSE_PC_TO_PREFIX "${RECOURSE_PC_TO_PREFIX}")
configure_file(cmake/recourse.pc.in ${CMAKE_CURRENT_BINARY_DIR}/recourse.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/recourse.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
