# Build step: m2v compile SRC -o OUT. Never fails the build: a kernel the compiler rejects is reported by the test
# that needs it (the test prints OUT/<name>.log), so one compiler bug does not hide every other result.
get_filename_component(name ${SRC} NAME_WE)
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${M2V} compile ${SRC} -o ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(WRITE ${OUT}/${name}.log "m2v compile ${SRC}\nexit code: ${rc}\n${out}${err}")
if(NOT rc EQUAL 0)
  message(WARNING "m2v compile ${name}.metal failed (exit ${rc}); see ${OUT}/${name}.log\n${err}")
endif()
file(WRITE ${STAMP} "${rc}\n")
