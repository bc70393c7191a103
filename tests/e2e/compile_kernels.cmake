# Build step: m2v compile SRC into OUT. Never fails the build: a kernel the compiler rejects is reported by the test
# that needs it (the test prints OUT/<name>.log), so one compiler bug does not hide every other result.
# The modules this file produced last time (OUT/<name>.list) are removed first, so a kernel that stops compiling
# is never tested through a stale module.
get_filename_component(name ${SRC} NAME_WE)
set(tmp ${OUT}/.tmp_${name})
file(REMOVE_RECURSE ${tmp})
file(MAKE_DIRECTORY ${tmp})
if(EXISTS ${OUT}/${name}.list)
  file(STRINGS ${OUT}/${name}.list old_files)
  foreach(f ${old_files})
    file(REMOVE ${OUT}/${f})
  endforeach()
  file(REMOVE ${OUT}/${name}.list)
endif()
execute_process(COMMAND ${M2V} compile ${SRC} -o ${tmp}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(WRITE ${OUT}/${name}.log "m2v compile ${SRC}\nexit code: ${rc}\n${out}${err}")
# Whatever compiled is kept (the compiler writes the entry points that succeeded) and listed.
set(listing "")
file(GLOB produced RELATIVE ${tmp} ${tmp}/*)
foreach(f ${produced})
  file(COPY ${tmp}/${f} DESTINATION ${OUT})
  string(APPEND listing "${f}\n")
endforeach()
if(NOT rc EQUAL 0)
  message(WARNING "m2v compile ${name}.metal failed (exit ${rc}); see ${OUT}/${name}.log\n${err}")
endif()
file(WRITE ${OUT}/${name}.list "${listing}")
file(REMOVE_RECURSE ${tmp})
file(WRITE ${STAMP} "${rc}\n")
