# The man pages: ulnetd(8), ulnetctl(8), ulst(8) and libulnet(3), written
# in scdoc (docs/man/*.scd) and turned into roff in the build tree
# (build/man/), part of the default build. cmake/install.cmake installs
# them from ULNET_MAN8_PAGES and ULNET_MAN3_PAGES.
#
# ULNET_BUILD_MAN: AUTO (the default: ON when scdoc is found, else OFF with
# a message, so the library alone still needs only a C compiler and CMake),
# ON (a missing scdoc fails the configure) or OFF. AUTO is decided again at
# every configure, so installing scdoc later is enough. ulnetd(8),
# ulnetctl(8) and ulst(8) come with the tools (ULNET_BUILD_TOOLS).
#
# Sets ULNET_MAN (ON/OFF: pages are built), ULNET_MAN_DIR (where they are
# built), ULNET_MAN8_PAGES and ULNET_MAN3_PAGES (the built files).
set(ULNET_BUILD_MAN AUTO CACHE STRING
    "Build and install the man pages with scdoc: AUTO (when scdoc is found), ON or OFF")
set_property(CACHE ULNET_BUILD_MAN PROPERTY STRINGS AUTO ON OFF)

find_program(ULNET_SCDOC scdoc DOC "scdoc, which turns docs/man/*.scd into man pages")
set(ULNET_MAN_DIR ${CMAKE_BINARY_DIR}/man)
set(ULNET_MAN8_PAGES "")
set(ULNET_MAN3_PAGES "")

string(TOUPPER "${ULNET_BUILD_MAN}" _ulnet_man_mode)
if(_ulnet_man_mode STREQUAL "AUTO")
  if(ULNET_SCDOC)
    set(ULNET_MAN ON)
  else()
    set(ULNET_MAN OFF)
    message(STATUS "scdoc not found: the man pages are not built (install scdoc, "
                   "scripts/install-deps.sh does, or pass -DULNET_BUILD_MAN=OFF to silence this)")
  endif()
elseif(ULNET_BUILD_MAN)
  if(NOT ULNET_SCDOC)
    message(FATAL_ERROR "ULNET_BUILD_MAN=${ULNET_BUILD_MAN} but scdoc was not found: install it "
                        "(Debian: apt-get install scdoc; scripts/install-deps.sh does), point "
                        "ULNET_SCDOC at it, or configure with -DULNET_BUILD_MAN=OFF")
  endif()
  set(ULNET_MAN ON)
else()
  set(ULNET_MAN OFF)
endif()

if(ULNET_MAN)
  set(_ulnet_man_sources libulnet.3)
  if(ULNET_BUILD_TOOLS)
    list(APPEND _ulnet_man_sources ulnetd.8 ulnetctl.8 ulst.8)
  endif()
  set(_ulnet_man_outputs "")
  foreach(page ${_ulnet_man_sources})
    set(src ${CMAKE_SOURCE_DIR}/docs/man/${page}.scd)
    set(out ${ULNET_MAN_DIR}/${page})
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -DSCDOC=${ULNET_SCDOC} -DSRC=${src} -DDST=${out}
              -DVERSION=${PROJECT_VERSION} -P ${CMAKE_SOURCE_DIR}/cmake/man-page.cmake
      DEPENDS ${src} ${CMAKE_SOURCE_DIR}/cmake/man-page.cmake
      COMMENT "scdoc: ${page}"
      VERBATIM)
    list(APPEND _ulnet_man_outputs ${out})
    if(page MATCHES "\\.8$")
      list(APPEND ULNET_MAN8_PAGES ${out})
    else()
      list(APPEND ULNET_MAN3_PAGES ${out})
    endif()
  endforeach()
  add_custom_target(ulnet_man ALL DEPENDS ${_ulnet_man_outputs})
  string(JOIN ", " _ulnet_man_list ${_ulnet_man_sources})
  message(STATUS "man pages: ${_ulnet_man_list} (scdoc: ${ULNET_SCDOC})")
endif()
