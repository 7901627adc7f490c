# The install tree (GNUInstallDirs; docs/install.md). Components, for whoever
# packages ulnet (one package each):
#   runtime  libulnet.so.<major>, libulnet.so.X.Y.Z
#   dev      headers, libulnet.so, libulnet.a, ulnet.pc, the CMake package,
#            libulnet(3)
#   tools    ulnetd, ulnetctl, ulst, the systemd unit, /etc/ulnet/ulnet.conf,
#            ulnetd(8), ulnetctl(8), ulst(8)
#   doc      README.md and docs/*.md
include(CMakePackageConfigHelpers)

set(ULNET_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ulnet CACHE STRING
    "Where the CMake package (ulnetConfig.cmake) goes, relative to the prefix")
# systemd also reads /usr/local/lib/systemd/system, so the default suits any prefix.
set(ULNET_SYSTEMD_UNITDIR lib/systemd/system CACHE STRING
    "Where ulnetd.service goes (relative: to the prefix)")

# --- library ---------------------------------------------------------------------
install(TARGETS ulnet_shared ulnet_static EXPORT ulnetTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/ulnet DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(EXPORT ulnetTargets NAMESPACE ulnet:: DESTINATION ${ULNET_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/ulnetConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/ulnetConfig.cmake
                              INSTALL_DESTINATION ${ULNET_CMAKE_DIR})
# The SONAME changes with the major version: so does CMake's compatibility.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/ulnetConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/ulnetConfig.cmake ${CMAKE_BINARY_DIR}/ulnetConfigVersion.cmake
        DESTINATION ${ULNET_CMAKE_DIR} COMPONENT dev)

# --- tools -------------------------------------------------------------------------
# ulnetd and ulnetctl administer a node: sbin, as Debian's lnetctl
# (/usr/sbin). ulst runs its own node in the caller's process and needs no
# privilege (a high port and --accept all, docs/ulst.md): a user's benchmark
# tool, like iperf3, so bin.
if(ULNET_BUILD_TOOLS)
  foreach(t ulnetd ulnetctl)
    if(TARGET ${t})
      install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT tools)
    endif()
  endforeach()
  if(TARGET ulst)
    install(TARGETS ulst RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  endif()
endif()

# --- man pages ------------------------------------------------------------------------
# Built by cmake/man.cmake (from docs/man/*.scd, when ULNET_MAN is on):
# ulnetd(8), ulnetctl(8), ulst(8) with the tools, libulnet(3) with the
# headers, where Debian puts them (plain roff: compressing is the
# packager's job).
if(ULNET_MAN8_PAGES)
  install(FILES ${ULNET_MAN8_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT tools)
endif()
if(ULNET_MAN3_PAGES)
  install(FILES ${ULNET_MAN3_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3 COMPONENT dev)
endif()

# --- documentation -------------------------------------------------------------------
# (ulnetd.service's Documentation= points at tools.md here)
file(GLOB ULNET_DOCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${ULNET_DOCS}
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)

# --- files that name install paths: generated at install time ------------------------
# ulnet.pc, ulnetd.service (ExecStart, --config) and the example config are
# written when installing, from the prefix of that install, so
# `cmake --install build --prefix /usr` gives /usr/sbin/ulnetd and /etc/ulnet
# whatever prefix the build was configured with. An existing
# <sysconfdir>/ulnet/ulnet.conf is kept, never overwritten.
configure_file(${CMAKE_SOURCE_DIR}/cmake/install-generated.cmake.in
               ${CMAKE_BINARY_DIR}/install-generated.cmake @ONLY)
install(CODE "set(ULNET_GENERATE dev)\ninclude(\"${CMAKE_BINARY_DIR}/install-generated.cmake\")"
        COMPONENT dev)
if(ULNET_BUILD_TOOLS)
  install(CODE "set(ULNET_GENERATE tools)\ninclude(\"${CMAKE_BINARY_DIR}/install-generated.cmake\")"
          COMPONENT tools)
endif()
