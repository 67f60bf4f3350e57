# bad_input_test(NAME "expected text" ARGS...): runs the bf16emu CLI with ARGS and checks the
# answer to bad input: exit 2 and one stderr line containing the text (tests/cli/run_cli.py),
# within 60 s. Included by tests/bias and tests/pitfalls.
include_guard(GLOBAL)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
function(bad_input_test name expect)
  add_test(NAME ${name}
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/cli/run_cli.py --rc 2 "--expect=${expect}"
                   --lines 1 -- $<TARGET_FILE:bf16emu_cli> ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 60)
endfunction()
