# One man page (cmake/man.cmake runs it at build time):
#   cmake -DSCDOC=scdoc -DSRC=docs/man/X.scd -DDST=build/man/X -DVERSION=0.1.0 -P man-page.cmake
# @ULNET_VERSION@ in the source becomes VERSION (the pages' footer), then
# scdoc writes the roff page. The page is replaced only once scdoc
# succeeded, so a failed build leaves no page behind for the test to read.
# (scdoc dates the page today, or SOURCE_DATE_EPOCH when that is set, as a
# package build sets it.)
foreach(v SCDOC SRC DST VERSION)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "man-page.cmake: -D${v}=... missing")
  endif()
endforeach()
file(READ "${SRC}" text)
string(REPLACE "@ULNET_VERSION@" "${VERSION}" text "${text}")
file(WRITE "${DST}.scd" "${text}")
execute_process(COMMAND "${SCDOC}" INPUT_FILE "${DST}.scd" OUTPUT_FILE "${DST}.tmp"
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${DST}.tmp" "${DST}")
  message(FATAL_ERROR "scdoc failed on ${SRC} (line numbers are the source's): ${err}")
endif()
file(RENAME "${DST}.tmp" "${DST}")
